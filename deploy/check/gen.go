package check

import (
	"flag"
	"strings"
)

var update = flag.Bool("update", false, "rewrite generated artifacts (deploy/kubernetes/prometheusrule.yaml)")

// PrometheusRuleYAML wraps a Prometheus rules file (its groups, verbatim, comments kept)
// into a monitoring.coreos.com/v1 PrometheusRule.
func PrometheusRuleYAML(rules string) string {
	var b strings.Builder
	b.WriteString(`# GENERATED from deploy/prometheus/iu-runner.rules.yml by
#   cd deploy/check && go test -run PrometheusRule -update
# Do not edit: edit the rules file (promtool checks and unit-tests it) and regenerate.
# deploy/check fails when the two differ.
apiVersion: monitoring.coreos.com/v1
kind: PrometheusRule
metadata:
  name: iu-runner
  namespace: iu
  labels:
    app.kubernetes.io/name: iu-runner
spec:
`)
	inGroups := false
	for _, l := range strings.Split(strings.TrimRight(rules, "\n"), "\n") {
		if strings.HasPrefix(l, "groups:") {
			inGroups = true
		}
		if !inGroups {
			continue
		}
		if l == "" {
			b.WriteString("\n")
			continue
		}
		b.WriteString("  " + l + "\n")
	}
	return b.String()
}
