package check

import (
	"encoding/json"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"sigs.k8s.io/yaml"

	"github.com/iu-core/event-worker/internal/metrics"
)

type rulesFile struct {
	Groups []struct {
		Name  string `json:"name"`
		Rules []struct {
			Record string `json:"record"`
			Alert  string `json:"alert"`
			Expr   string `json:"expr"`
		} `json:"rules"`
	} `json:"groups"`
}

func loadRules(t *testing.T) rulesFile {
	t.Helper()
	data, err := os.ReadFile(Artifact("IU_DEPLOY_RULES", "deploy", "prometheus", "iu-runner.rules.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var f rulesFile
	if err := yaml.Unmarshal(data, &f); err != nil {
		t.Fatal(err)
	}
	return f
}

// Rule: every alert has a promtool unit test that expects it to fire (promtool itself
// does not require one), so no alert ships that was never seen firing.
func TestEveryAlertHasAFiringUnitTest(t *testing.T) {
	data, err := os.ReadFile(Artifact("IU_DEPLOY_RULES_TEST", "deploy", "prometheus", "iu-runner.rules.test.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var tf struct {
		Tests []struct {
			AlertRuleTest []struct {
				Alertname string `json:"alertname"`
				ExpAlerts []any  `json:"exp_alerts"`
			} `json:"alert_rule_test"`
		} `json:"tests"`
	}
	if err := yaml.Unmarshal(data, &tf); err != nil {
		t.Fatal(err)
	}
	fires := map[string]bool{}
	for _, tc := range tf.Tests {
		for _, a := range tc.AlertRuleTest {
			if len(a.ExpAlerts) > 0 {
				fires[a.Alertname] = true
			}
		}
	}
	n := 0
	for _, g := range loadRules(t).Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				continue
			}
			n++
			if !fires[r.Alert] {
				t.Errorf("alert %s has no promtool unit test that expects it to fire", r.Alert)
			}
		}
	}
	if n == 0 {
		t.Fatal("no alerts found")
	}
}

var metricName = regexp.MustCompile(`\biu_(?:runner|queue_health)_[a-z_]+\b`)

// exported is every metric family name the runner exports, with a full health snapshot
// set so the iu_queue_health_* families are present.
func exported(t *testing.T) map[string]bool {
	t.Helper()
	m := metrics.New()
	v := 1.0
	m.SetHealth(metrics.Health{StaleExecutors: 1, Rows: []metrics.HealthRow{
		{Source: "heartbeat", Subject: "x", StatusHint: "stale", Age: &v, Problem: true},
		{Source: "cursor", Subject: "w", StatusHint: "gated", Backlog: &v, Age: &v, GatedWaiting: &v},
		{Source: "dead_letter_event", Subject: "iu", OpenDeadLetters: &v, Problem: true},
		{Source: "heartbeat", Subject: "y", StatusHint: "fresh", Age: &v, Problem: true, ErrorStatus: true},
	}})
	m.WorkerRuns.WithLabelValues("w", "ok").Inc()
	m.EventsRouted.WithLabelValues("w", "dry_run").Inc()
	m.DeadLetters.WithLabelValues("w").Inc()
	m.RunDuration.WithLabelValues("w").Observe(1)
	m.DBErrors.WithLabelValues("heartbeat").Inc()
	m.Mode.WithLabelValues("hybrid").Set(1)
	fams, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, f := range fams {
		out[f.GetName()] = true
		if f.GetType() == dto.MetricType_HISTOGRAM {
			for _, s := range []string{"_bucket", "_sum", "_count"} {
				out[f.GetName()+s] = true
			}
		}
	}
	return out
}

// Rule: every runner metric the rules and the dashboard name is one the runner exports (a
// misspelt name makes an alert that can never fire and a panel that stays empty).
func TestReferencedMetricsExist(t *testing.T) {
	have := exported(t)
	var exprs []string
	for _, g := range loadRules(t).Groups {
		for _, r := range g.Rules {
			exprs = append(exprs, r.Expr)
		}
	}
	exprs = append(exprs, dashboardExprs(t)...)
	missing := map[string]bool{}
	for _, e := range exprs {
		for _, name := range metricName.FindAllString(e, -1) {
			if !have[name] {
				missing[name] = true
			}
		}
	}
	var names []string
	for n := range missing {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		t.Errorf("%s is referenced but the runner does not export it", n)
	}
}

type dashboard struct {
	Templating struct {
		List []struct {
			Name  string `json:"name"`
			Type  string `json:"type"`
			Query any    `json:"query"`
		} `json:"list"`
	} `json:"templating"`
	Panels []struct {
		Title   string `json:"title"`
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
	} `json:"panels"`
}

func loadDashboard(t *testing.T) dashboard {
	t.Helper()
	data, err := os.ReadFile(Artifact("IU_DEPLOY_DASHBOARD", "deploy", "grafana", "iu-runner-dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatal(err)
	}
	return d
}

func dashboardExprs(t *testing.T) []string {
	var out []string
	for _, p := range loadDashboard(t).Panels {
		for _, tg := range p.Targets {
			out = append(out, tg.Expr)
		}
	}
	return out
}

var (
	rangeFn    = regexp.MustCompile(`\b(rate|irate|increase|delta|deriv)\(([^\[]*)\[([^\]]*)\]`)
	selectorRe = regexp.MustCompile(`\b((?:iu_(?:runner|queue_health)_[a-z_]+)|up)(\{[^}]*\})?`)
)

// Rule: the dashboard has job and instance variables that every runner query honours, and
// every rate over a counter uses $__rate_interval (a fixed [5m] breaks at other scrape
// intervals and hides short spikes at long ranges).
func TestDashboardVariablesAndRateInterval(t *testing.T) {
	d := loadDashboard(t)
	vars := map[string]bool{}
	for _, v := range d.Templating.List {
		if v.Type == "query" {
			vars[v.Name] = true
		}
	}
	for _, v := range []string{"job", "instance"} {
		if !vars[v] {
			t.Errorf("the dashboard has no %q query variable", v)
		}
	}
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			for _, m := range rangeFn.FindAllStringSubmatch(tg.Expr, -1) {
				if m[3] != "$__rate_interval" {
					t.Errorf("panel %q: %s(...[%s]) — use [$__rate_interval]", p.Title, m[1], m[3])
				}
			}
			for _, m := range selectorRe.FindAllStringSubmatch(tg.Expr, -1) {
				if !strings.Contains(m[2], `job=~"$job"`) || !strings.Contains(m[2], `instance=~"$instance"`) {
					t.Errorf("panel %q: %s%s ignores the job/instance variables", p.Title, m[1], m[2])
				}
			}
		}
	}
}
