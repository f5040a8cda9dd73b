package adopt

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/iu-core/event-worker/internal/legacydb"
	"github.com/iu-core/event-worker/internal/pgtest"
)

func mustAtoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// ownerDB creates, as the cluster's superuser (admin: a superuser's connection), a login
// role with CREATEROLE and a database it owns: the shape managed PostgreSQL gives a
// customer. On 13 and 14 it first does what the README asks of the operator there: PUBLIC
// may no longer CREATE in schema public, the owner may. Returns the owner's URL of the database.
func ownerDB(t *testing.T, admin *pgtest.DB, major, name string) string {
	t.Helper()
	ctx := pgtest.Ctx(t)
	role := "iu_owner_" + name
	for _, q := range []string{
		fmt.Sprintf(`CREATE ROLE %s LOGIN CREATEROLE PASSWORD 'owner'`, role),
		fmt.Sprintf(`CREATE DATABASE %s OWNER %s`, role, role),
	} {
		if _, err := admin.Pool.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_, _ = admin.Pool.Exec(ctx, fmt.Sprintf(`DROP DATABASE IF EXISTS %s WITH (FORCE)`, role))
	})
	u, err := url.Parse(admin.URL)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + role
	if major == "13" || major == "14" {
		c, err := pgx.Connect(ctx, u.String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close(ctx)
		if _, err := c.Exec(ctx, fmt.Sprintf(`REVOKE CREATE ON SCHEMA public FROM PUBLIC; GRANT CREATE ON SCHEMA public TO %s`, role)); err != nil {
			t.Fatalf("the operator's step on %s: %v", major, err)
		}
	}
	u.User = url.UserPassword(role, "owner")
	return u.String()
}

// Rule: a database owner with CREATEROLE, and no superuser, installs the package, adopts
// the first generation's database, runs it, and rolls it back, on PostgreSQL 13 through
// 18 (on 13 and 14 after the operator's one documented step: REVOKE CREATE ON SCHEMA public
// FROM PUBLIC; GRANT CREATE ON SCHEMA public TO the owner).
func TestInstall_DatabaseOwnerWithoutSuperuser(t *testing.T) {
	t.Parallel()
	for _, major := range []string{"13", "14", "15", "16", "17", "18"} {
		t.Run("postgresql"+major, func(t *testing.T) {
			t.Parallel()
			var h *pgtest.Harness
			if major == "15" {
				var err error
				if h, err = pgtest.Current(); err != nil {
					t.Fatal(err)
				}
			} else {
				h = majorHarness(t, pgtest.MajorBinDir(t, mustAtoi(t, major)), major)
			}
			admin := h.NewDBOn(t, false)
			var version string
			admin.QueryRow(t, `SHOW server_version`, nil, &version)
			if !strings.HasPrefix(version, major+".") {
				pgtest.Unavailable(t, "the default server runs PostgreSQL %s, not %s", version, major)
			}
			ctx := pgtest.Ctx(t)
			suffix := fmt.Sprintf("%s_%d", major, time.Now().UnixNano()%1_000_000_000)

			// A new database: install, work, roll back.
			fresh := ownerDB(t, admin, major, "fresh_"+suffix)
			iuOK(t, fresh, "migrate", "up")
			c, err := pgx.Connect(ctx, fresh)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close(ctx)
			var super bool
			if err := c.QueryRow(ctx, `SELECT rolsuper FROM pg_roles WHERE rolname = current_user`).Scan(&super); err != nil || super {
				t.Fatalf("the installing role must not be a superuser (%v)", err)
			}
			for _, q := range []string{
				`INSERT INTO public.event_type_registry (event_domain, event_type, description) VALUES ('iu', 'owner_probe', 'test')`,
				`SELECT public.fn_iu_emit_event('iu', 'owner_probe', 'test')`,
				`SELECT public.fn_iu_route_worker_register('owner_worker', 'iu')`,
				`SELECT public.fn_iu_route_worker_run('owner_worker', 100)`,
				`SELECT public.fn_queue_stale_check()`,
			} {
				if _, err := c.Exec(ctx, q); err != nil {
					t.Fatalf("as the database owner: %s: %v", q, err)
				}
			}
			c.Close(ctx)
			iuOK(t, fresh, "migrate", "down", "--to", "0", "--drop-history")

			// The first generation's database, built by the same owner: adopt, run, roll back.
			legacy := ownerDB(t, admin, major, "legacy_"+suffix)
			if _, err := legacydb.Load(ctx, legacy, variantRows); err != nil {
				t.Fatalf("the owner builds the first generation's database: %v", err)
			}
			iuOK(t, legacy, "migrate", "up")
			c, err = pgx.Connect(ctx, legacy)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close(ctx)
			var claimed int64
			if err := c.QueryRow(ctx, `SELECT (public.fn_iu_route_worker_run($1, 10000) ->> 'claimed')::bigint`, legacyWorker).Scan(&claimed); err != nil || claimed == 0 {
				t.Fatalf("the adopted worker, as the database owner: claimed %d, %v", claimed, err)
			}
			c.Close(ctx)
			iuOK(t, legacy, "migrate", "down", "--to", "0")
		})
	}
}
