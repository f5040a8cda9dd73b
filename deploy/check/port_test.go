package check

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/iu-core/event-worker/internal/config"
)

var httpAddrFlag = regexp.MustCompile("--http-addr[ =]([^\\s\"',\\]`)]+)")

// Rule: every artifact that sets --http-addr uses the runner's default port (7432), and
// none scrapes or publishes 9187, postgres_exporter's port (the old default, which made
// the runner exit 1 on database hosts that run postgres_exporter).
func TestArtifactsUseTheDefaultPort(t *testing.T) {
	var files []string
	for _, g := range []string{"deploy/systemd/*", "deploy/kubernetes/*.yaml", "deploy/prometheus/*", "deploy/Dockerfile", "deploy/cron/*", "runbooks/*.md"} {
		m, _ := filepath.Glob(filepath.Join(Root(), g))
		files = append(files, m...)
	}
	seen := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(Root(), f)
		for _, m := range httpAddrFlag.FindAllStringSubmatch(string(data), -1) {
			_, port, err := net.SplitHostPort(m[1])
			if err != nil {
				continue // prose such as "--http-addr another address"
			}
			seen++
			if port != fmt.Sprint(config.DefaultHTTPPort) && port != "0" {
				t.Errorf("%s: --http-addr %s, the runner's port is %d", rel, m[1], config.DefaultHTTPPort)
			}
		}
		if !strings.HasSuffix(f, ".md") && strings.Contains(string(data), "9187") {
			t.Errorf("%s mentions 9187, postgres_exporter's port", rel)
		}
	}
	if seen == 0 {
		t.Fatal("no --http-addr found in the artifacts")
	}
}
