package service

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/iu-core/event-worker/internal/store"
)

// Rule: rows in a default partition (maintenance fell behind; retention never drops them)
// are a warning in the runner's log, not a debug line nobody reads; a postponed call and a
// quiet one are not warnings.
func TestLogMaintenance_DefaultRowsWarn(t *testing.T) {
	for _, c := range []struct {
		name string
		res  store.PartitionMaintenance
		want string
	}{
		{"behind", store.PartitionMaintenance{DefaultRows: &store.DefaultPartitions{EventOutbox: 3}}, "level=WARN"},
		{"postponed", store.PartitionMaintenance{LockTimeout: true, DefaultRows: &store.DefaultPartitions{}}, "level=INFO"},
		{"created", store.PartitionMaintenance{Created: []string{"event_outbox_p1"}, DefaultRows: &store.DefaultPartitions{}}, "level=INFO"},
		{"quiet", store.PartitionMaintenance{DefaultRows: &store.DefaultPartitions{}}, "level=DEBUG"},
	} {
		var buf bytes.Buffer
		s := &Service{log: slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))}
		s.logMaintenance(c.res)
		if !strings.Contains(buf.String(), c.want) {
			t.Errorf("%s: want a %s line, got %q", c.name, c.want, buf.String())
		}
	}
}
