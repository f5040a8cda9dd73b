package pgtest

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Obj is a decoded jsonb object (numbers are float64): what the package's functions answer.
type Obj = map[string]any

// Querier is a pool, a connection or a transaction.
type Querier interface {
	QueryRow(context.Context, string, ...any) pgx.Row
	Exec(context.Context, string, ...any) (pgconn.CommandTag, error)
}

// CallJSON runs a statement returning one jsonb value and decodes it.
func CallJSON(t testing.TB, q Querier, sql string, args ...any) Obj {
	t.Helper()
	var raw []byte
	if err := q.QueryRow(Ctx(t), sql, args...).Scan(&raw); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	var out Obj
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("%s: decoding %s: %v", sql, raw, err)
	}
	return out
}

// CallErr runs a statement that must fail and returns the error.
func CallErr(t testing.TB, q Querier, sql string, args ...any) error {
	t.Helper()
	_, err := q.Exec(Ctx(t), sql, args...)
	if err == nil {
		t.Fatalf("%s: want an error, got none", sql)
	}
	return err
}

// RequireJSONEqual fails t unless got is exactly the JSON object want.
func RequireJSONEqual(t testing.TB, got Obj, want string) {
	t.Helper()
	var w Obj
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, w) {
		g, _ := json.Marshal(got)
		t.Fatalf("JSON = %s, want exactly %s", g, want)
	}
}

// Num is o[key] as a number, failing t when it is missing or not one.
func Num(t testing.TB, o Obj, key string) float64 {
	t.Helper()
	v, ok := o[key].(float64)
	if !ok {
		t.Fatalf("key %q missing or not a number in %v", key, o)
	}
	return v
}
