package service

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/iu-core/event-worker/internal/metrics"
)

// unreachableDB answers like fakeDB but its Ping fails with what a driver reports.
type unreachableDB struct {
	*fakeDB
	err error
}

func (u unreachableDB) Ping(context.Context) error { return u.err }

// Rule: the runner's HTTP port tells strangers nothing. /readyz answers a short status when
// the database is unreachable; the driver's error (user, host, authentication failure) goes
// to the log only.
func TestReadyzHidesTheDatabaseErrorAndLogsIt(t *testing.T) {
	secret := `failed to connect to user=iu_runner host=db.internal.example: password authentication failed for user "iu_runner"`
	var logged bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logged, nil))
	s := New(cfg(), unreachableDB{fakeDB: &fakeDB{}, err: errors.New(secret)}, nil, log, metrics.New())

	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
	if rec.Code != http.StatusServiceUnavailable {
		t.Fatalf("/readyz with the database down: %d", rec.Code)
	}
	body := rec.Body.String()
	for _, leak := range []string{"iu_runner", "db.internal.example", "password", "authentication"} {
		if strings.Contains(body, leak) {
			t.Fatalf("/readyz body leaks %q: %q", leak, body)
		}
	}
	if strings.TrimSpace(body) != "not ready: database unreachable" {
		t.Errorf("/readyz body = %q", body)
	}
	if !strings.Contains(logged.String(), "password authentication failed") {
		t.Errorf("the reason must be logged for the operator; log:\n%s", logged.String())
	}
}

// Rule: the HTTP server bounds every phase of a connection by default: header reads, the
// whole request, the response and idle keep-alive connections, and caps the connections.
func TestHTTPServerHasTimeouts(t *testing.T) {
	s := New(cfg(), &fakeDB{}, nil, quiet(), metrics.New())
	srv := s.httpServer()
	if srv.ReadHeaderTimeout <= 0 || srv.ReadTimeout <= 0 || srv.WriteTimeout <= 0 || srv.IdleTimeout <= 0 {
		t.Fatalf("ReadHeaderTimeout %v, ReadTimeout %v, WriteTimeout %v, IdleTimeout %v: all must be set",
			srv.ReadHeaderTimeout, srv.ReadTimeout, srv.WriteTimeout, srv.IdleTimeout)
	}
	// /readyz may wait 2 s for the database: the response deadline must leave it that long
	if srv.WriteTimeout <= 2*time.Second {
		t.Fatalf("WriteTimeout %v cuts off a /readyz that waits its full 2s for the database", srv.WriteTimeout)
	}
	if s.cfg.HTTP.MaxConns <= 0 {
		t.Fatalf("no connection cap (MaxConns %d)", s.cfg.HTTP.MaxConns)
	}
}
