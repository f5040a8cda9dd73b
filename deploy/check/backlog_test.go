package check

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/iu-core/event-worker/internal/metrics"
)

// Rule (issue 21): an alert over a route worker's backlog can fire, and its tests prove it
// with figures the runner can export. The runner exports the backlog exactly up to
// metrics.BacklogCap (10,000: where v_queue_health stops counting) and BacklogCap beyond.
// Before, IuRouteWorkerBacklog fired only above 10,000, which the runner never exports, and
// its promtool test fed 20,000. So: every threshold a rule puts on the cursor backlog lies
// below the cap, and every cursor backlog value the promtool tests feed lies at or below it.
func TestBacklogRulesFireBelowTheCapAndTestsFeedExportableValues(t *testing.T) {
	threshold := regexp.MustCompile(`(?:iu_queue_health:route_backlog:last_known|iu_queue_health_backlog[^>]*)\s*>=?\s*([0-9.e+]+)`)
	found := 0
	for _, g := range loadRules(t).Groups {
		for _, r := range g.Rules {
			for _, m := range threshold.FindAllStringSubmatch(r.Expr, -1) {
				found++
				v, err := strconv.ParseFloat(m[1], 64)
				if err != nil {
					t.Fatalf("%s: threshold %q: %v", r.Alert, m[1], err)
				}
				if v >= metrics.BacklogCap {
					t.Errorf("%s fires above %v, but the runner exports the backlog only up to %d: it can never fire", r.Alert, v, metrics.BacklogCap)
				}
			}
		}
	}
	if found == 0 {
		t.Fatal("no rule over the route backlog found: the premise is gone")
	}

	data, err := os.ReadFile(Artifact("IU_DEPLOY_RULES_TEST", "deploy", "prometheus", "iu-runner.rules.test.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var tf struct {
		Tests []struct {
			Name        string `json:"name"`
			InputSeries []struct {
				Series string `json:"series"`
				Values string `json:"values"`
			} `json:"input_series"`
		} `json:"tests"`
	}
	if err := yaml.Unmarshal(data, &tf); err != nil {
		t.Fatal(err)
	}
	fed := 0
	for _, tc := range tf.Tests {
		for _, s := range tc.InputSeries {
			if !strings.HasPrefix(s.Series, "iu_queue_health_backlog{") || !strings.Contains(s.Series, `source="cursor"`) {
				continue
			}
			fed++
			if hi := expandedMax(t, s.Values); hi > metrics.BacklogCap {
				t.Errorf("test %q feeds %s up to %v, a figure the runner never exports (at most %d)", tc.Name, s.Series, hi, metrics.BacklogCap)
			}
		}
	}
	if fed == 0 {
		t.Fatal("no promtool test feeds a cursor backlog: the premise is gone")
	}
}

// expandedMax is the largest value a promtool series notation reaches ("a+bxn", "a-bxn",
// "axn", "a", "_", "stale", space separated).
func expandedMax(t *testing.T, values string) float64 {
	t.Helper()
	step := regexp.MustCompile(`^(-?[0-9.e]+)(?:([+-])([0-9.e]+))?(?:x([0-9]+))?$`)
	hi := 0.0
	for _, tok := range strings.Fields(values) {
		if tok == "_" || tok == "stale" {
			continue
		}
		m := step.FindStringSubmatch(tok)
		if m == nil {
			t.Fatalf("cannot read series values %q (token %q)", values, tok)
		}
		a, _ := strconv.ParseFloat(m[1], 64)
		hi = max(hi, a)
		if m[2] == "+" && m[4] != "" {
			b, _ := strconv.ParseFloat(m[3], 64)
			n, _ := strconv.ParseFloat(m[4], 64)
			hi = max(hi, a+b*n)
		}
	}
	return hi
}
