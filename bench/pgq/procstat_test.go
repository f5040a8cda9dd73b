package pgqbench

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
)

// backendStat is what the kernel says a backend has used so far: time on a CPU
// (/proc/<pid>/schedstat), minor page faults (/proc/<pid>/stat) and context switches
// (/proc/<pid>/status). Differences of two readings around a run say where its wall time
// went that instruction counts cannot show: the kernel's time (page faults, system calls)
// and waits. Zero when the server is not on this machine (its /proc is not readable).
type backendStat struct {
	cpuNs, minflt, volCS, involCS int64
}

func (a backendStat) sub(b backendStat) backendStat {
	return backendStat{a.cpuNs - b.cpuNs, a.minflt - b.minflt, a.volCS - b.volCS, a.involCS - b.involCS}
}

// backendPID is the server process serving conn.
func backendPID(ctx context.Context, conn *pgx.Conn) int {
	var pid int
	if err := conn.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
		return 0
	}
	return pid
}

// readBackendStat reads pid's counters; ok is false when /proc does not have them.
func readBackendStat(pid int) (s backendStat, ok bool) {
	if pid == 0 {
		return s, false
	}
	sched, err := os.ReadFile(fmt.Sprintf("/proc/%d/schedstat", pid))
	if err != nil {
		return s, false
	}
	if f := strings.Fields(string(sched)); len(f) > 0 {
		s.cpuNs, _ = strconv.ParseInt(f[0], 10, 64)
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return s, false
	}
	// The fields after the command name, which is in parentheses and may hold spaces.
	if i := strings.LastIndexByte(string(stat), ')'); i > 0 {
		f := strings.Fields(string(stat)[i+1:])
		if len(f) > 7 {
			s.minflt, _ = strconv.ParseInt(f[7], 10, 64) // field 10 of the line
		}
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return s, false
	}
	for _, line := range strings.Split(string(status), "\n") {
		k, v, found := strings.Cut(line, ":")
		if !found {
			continue
		}
		n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		switch k {
		case "voluntary_ctxt_switches":
			s.volCS = n
		case "nonvoluntary_ctxt_switches":
			s.involCS = n
		}
	}
	return s, true
}
