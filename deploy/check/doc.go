// Package check verifies the deployment artifacts under deploy/ the way a cluster and an
// operator's tools would read them. It is a Go module of its own, so the Kubernetes and
// prometheus-operator API types it decodes into stay out of the product's go.mod.
//
//	cd deploy/check && go test ./...      (make deploy-check runs it, with promtool and systemd-analyze)
//
// The checks: every Kubernetes manifest decodes strictly (unknown or duplicate fields are
// errors) into the official k8s.io/api (and monitoring.coreos.com/v1) types; every pod
// template passes the Pod Security "restricted" profile (k8s.io/pod-security-admission,
// the admission plugin's own code); the kubelet can verify runAsNonRoot (a numeric user);
// the Dockerfile's final user is numeric and its build line makes a static binary from
// what .dockerignore lets through; the PrometheusRule carries exactly the rules file; every
// alert has a promtool unit test; every metric a rule or the dashboard names is exported
// by the runner; the dashboard has job/instance variables and uses $__rate_interval; the
// runbooks link the artifacts instead of carrying copies.
//
// Each check reads the shipped files, or the ones named by IU_DEPLOY_K8S_DIR,
// IU_DEPLOY_DOCKERFILE, IU_DEPLOY_RUNBOOKS_DIR, IU_DEPLOY_DASHBOARD and IU_DEPLOY_RULES (to run
// the same checks against another version of an artifact).
package check
