package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"
)

// The contract between the SQL and the runner. Every JSON document the runner reads from
// a SQL function has one struct in this package (one file per document), and the struct's
// tags are the whole list of keys the SQL emits:
//
//   - a key tagged without omitempty is in every shape of the document: when the SQL stops
//     emitting it (renamed, dropped), decoding fails instead of the value silently reading
//     as zero;
//   - a key tagged omitempty is in some shapes only; `contract:"shape,..."` names the shapes
//     that must carry it (a document with shapes says which one it is, see shaped);
//     omitempty without a contract tag means "present only sometimes" (e.g. fallback_error);
//   - a key the struct does not declare is an error in strict mode.
//
// Strict mode is what the contract test uses against the real SQL (internal/store's
// contract_test.go): a key added or renamed on either side turns it red, and the fix for an
// added key is one field. The runner itself decodes leniently about added keys, because a
// database may be migrated by a newer release while older runners still run: an added
// key must not stop them, a missing one must.

// shaped is implemented by a document that comes in several shapes (the worker run is
// busy, gated or ran); it names the shape of the decoded value.
type shaped interface{ contractShape() string }

// Strictness of a decode.
const (
	lenient = false // unknown keys are ignored (the runner)
	strict  = true  // unknown keys fail (the contract test)
)

// decode reads the JSON document doc (named in errors, e.g. "fn_queue_stale_check()")
// into v, a pointer to its contract struct, and checks that every key the struct requires
// is present, in nested objects and arrays of objects too.
func decode(doc string, raw []byte, v any, strictKeys bool) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if strictKeys {
		dec.DisallowUnknownFields()
	}
	t := reflect.TypeOf(v).Elem()
	if err := dec.Decode(v); err != nil {
		if strings.Contains(err.Error(), "unknown field") {
			return fmt.Errorf("decoding %s: %w (a key the SQL emits that %s does not declare)", doc, err, t)
		}
		return fmt.Errorf("decoding %s: %w", doc, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return fmt.Errorf("decoding %s: data after the JSON document", doc)
	}
	shape := ""
	if s, ok := v.(shaped); ok {
		shape = s.contractShape()
	}
	if err := requireKeys(raw, t, shape, ""); err != nil {
		return fmt.Errorf("decoding %s: %w (%s requires it)", doc, err, t)
	}
	return nil
}

// requireKeys checks raw (a JSON object) for every key t requires in shape; path names
// the object in errors. Nested structs are checked without a shape.
func requireKeys(raw json.RawMessage, t reflect.Type, shape, path string) error {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return fmt.Errorf("%s: want an object: %w", orTop(path), err)
	}
	for _, f := range reflect.VisibleFields(t) {
		key, required, ok := contractKey(f, shape)
		if !ok {
			continue
		}
		val, present := obj[key]
		if !present {
			if required {
				return fmt.Errorf("key %q missing in %s", key, orTop(path))
			}
			continue
		}
		if err := requireNested(val, f.Type, path+"."+key); err != nil {
			return err
		}
	}
	return nil
}

// requireNested descends into a value whose Go type is (a pointer to, a slice of) a
// contract struct. JSON null is accepted wherever the Go type allows it (decode has
// already checked that).
func requireNested(val json.RawMessage, t reflect.Type, path string) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if bytes.Equal(bytes.TrimSpace(val), []byte("null")) {
		return nil
	}
	switch {
	case t.Kind() == reflect.Struct && t.PkgPath() == reflect.TypeFor[WorkerRun]().PkgPath():
		return requireKeys(val, t, "", path)
	case t.Kind() == reflect.Slice:
		et := t.Elem()
		for et.Kind() == reflect.Pointer {
			et = et.Elem()
		}
		if et.Kind() != reflect.Struct || et.PkgPath() != reflect.TypeFor[WorkerRun]().PkgPath() {
			return nil
		}
		var items []json.RawMessage
		if err := json.Unmarshal(val, &items); err != nil {
			return fmt.Errorf("%s: want an array: %w", path, err)
		}
		for i, it := range items {
			if err := requireNested(it, et, fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	}
	return nil
}

// contractKey reads a field's JSON key and whether shape requires it; ok is false for
// fields that are not part of the document (json:"-", unexported).
func contractKey(f reflect.StructField, shape string) (key string, required, ok bool) {
	if !f.IsExported() || f.Anonymous {
		return "", false, false
	}
	tag := f.Tag.Get("json")
	if tag == "-" {
		return "", false, false
	}
	name, opts, _ := strings.Cut(tag, ",")
	if name == "" {
		name = f.Name
	}
	optional := slices.Contains(strings.Split(opts, ","), "omitempty")
	if !optional {
		return name, true, true
	}
	if shapes, has := f.Tag.Lookup("contract"); has {
		return name, slices.Contains(strings.Split(shapes, ","), shape), true
	}
	return name, false, true
}

func orTop(path string) string {
	if path == "" {
		return "the document"
	}
	return strings.TrimPrefix(path, ".")
}
