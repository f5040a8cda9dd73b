package check

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"

	"github.com/iu-core/event-worker/internal/config"
)

func k8sDir() string { return Artifact("IU_DEPLOY_K8S_DIR", "deploy", "kubernetes") }

func manifests(t *testing.T) []Manifest {
	t.Helper()
	ms, err := LoadManifests(k8sDir())
	if err != nil {
		t.Fatal(err)
	}
	return ms
}

func imageUser(t *testing.T) string {
	t.Helper()
	st, err := ParseDockerfile(Artifact("IU_DEPLOY_DOCKERFILE", "deploy", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	return FinalUser(st)
}

// Rule: every manifest decodes strictly into the official API types: a misspelled or
// misplaced field is an error here, not a field the API server silently drops.
func TestManifestsDecodeStrictly(t *testing.T) {
	ms := manifests(t)
	kinds := map[string]bool{}
	for _, m := range ms {
		kinds[m.Kind] = true
	}
	for _, k := range []string{"Namespace", "Deployment", "PodDisruptionBudget", "Job", "CronJob", "PodMonitor", "PrometheusRule"} {
		if !kinds[k] {
			t.Errorf("no %s manifest in %s", k, k8sDir())
		}
	}
	// and the decoder does refuse what it should: an unknown field
	bad := []byte("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\nspec:\n  replica: 2\n")
	if _, err := DecodeStrict("bad.yaml", bad); err == nil {
		t.Fatal("strict decoding accepted an unknown field (spec.replica)")
	}
}

// Rule: every pod the manifests create passes the Pod Security "restricted" profile, as the
// admission plugin evaluates it (the namespace enforces it).
func TestPodsPassRestrictedProfile(t *testing.T) {
	pts := PodTemplates(manifests(t))
	if len(pts) < 3 {
		t.Fatalf("%d pod templates, want the Deployment, the migrate Job and the CronJob", len(pts))
	}
	for _, p := range pts {
		reasons, err := Restricted(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range reasons {
			t.Errorf("%s violates the restricted profile: %s", p.Where, r)
		}
	}
}

// Rule: the kubelet can verify runAsNonRoot for every container: a numeric, non-zero uid
// from runAsUser or the image's USER (a user name, like distroless's "nonroot", makes the
// kubelet refuse to start the pod). And the manifests' uid is the image's.
func TestKubeletCanVerifyNonRoot(t *testing.T) {
	user := imageUser(t)
	for _, p := range PodTemplates(manifests(t)) {
		for _, e := range VerifyRunAsNonRoot(p, user) {
			t.Error(e)
		}
		if sc := p.Spec.SecurityContext; sc != nil && sc.RunAsUser != nil {
			uid, _, _ := strings.Cut(user, ":")
			if fmt.Sprint(*sc.RunAsUser) != uid {
				t.Errorf("%s runs as uid %d, the image's USER is %q", p.Where, *sc.RunAsUser, user)
			}
		}
	}
}

// Rule: the Deployment is highly available (two replicas, spread, a PodDisruptionBudget
// that covers its pods and leaves one up), serves on the runner's default port on every
// address, probes and scrapes that port by name; the migrate Job can be created again with
// a new image (no fixed name: a Job's pod template is immutable) and cleans up after
// itself; an init container gates the rollout on `migrate check`.
func TestWorkloadShape(t *testing.T) {
	ms := manifests(t)
	var dep *appsv1.Deployment
	var pdb *policyv1.PodDisruptionBudget
	var job *batchv1.Job
	var pm *monitoringv1.PodMonitor
	for _, m := range ms {
		switch o := m.Object.(type) {
		case *appsv1.Deployment:
			dep = o
		case *policyv1.PodDisruptionBudget:
			pdb = o
		case *batchv1.Job:
			job = o
		case *monitoringv1.PodMonitor:
			pm = o
		}
	}
	if dep == nil || pdb == nil || job == nil || pm == nil {
		t.Fatalf("missing manifests: deployment %v, pdb %v, job %v, podmonitor %v", dep != nil, pdb != nil, job != nil, pm != nil)
	}
	if dep.Spec.Replicas == nil || *dep.Spec.Replicas < 2 {
		t.Errorf("Deployment replicas %v, want at least 2", dep.Spec.Replicas)
	}
	sel, err := labels.ValidatedSelectorFromSet(pdb.Spec.Selector.MatchLabels)
	if err != nil || !sel.Matches(labels.Set(dep.Spec.Template.Labels)) {
		t.Errorf("the PodDisruptionBudget selector %v does not cover the Deployment's pods %v", pdb.Spec.Selector.MatchLabels, dep.Spec.Template.Labels)
	}
	if pdb.Spec.MinAvailable == nil || pdb.Spec.MinAvailable.IntValue() < 1 || pdb.Spec.MinAvailable.IntValue() >= int(*dep.Spec.Replicas) {
		t.Errorf("PodDisruptionBudget minAvailable %v: want at least 1 and fewer than the replicas", pdb.Spec.MinAvailable)
	}
	var runner *corev1.Container
	for i := range dep.Spec.Template.Spec.Containers {
		if dep.Spec.Template.Spec.Containers[i].Name == "runner" {
			runner = &dep.Spec.Template.Spec.Containers[i]
		}
	}
	if runner == nil {
		t.Fatal("no container named runner in the Deployment")
	}
	port := ""
	for _, a := range runner.Args {
		if v, ok := strings.CutPrefix(a, "--http-addr="); ok {
			_, port, _ = net.SplitHostPort(v)
		}
	}
	if port != fmt.Sprint(config.DefaultHTTPPort) {
		t.Errorf("the runner listens on port %q, the default is %d", port, config.DefaultHTTPPort)
	}
	if len(runner.Ports) != 1 || runner.Ports[0].ContainerPort != int32(config.DefaultHTTPPort) || runner.Ports[0].Name != "http" {
		t.Errorf("container ports %v: want http on %d", runner.Ports, config.DefaultHTTPPort)
	}
	for _, pr := range []*corev1.Probe{runner.LivenessProbe, runner.ReadinessProbe} {
		if pr == nil || pr.HTTPGet == nil || pr.HTTPGet.Port.String() != "http" {
			t.Errorf("probe %v does not use the http port", pr)
		}
	}
	if len(pm.Spec.PodMetricsEndpoints) != 1 || pm.Spec.PodMetricsEndpoints[0].Port == nil || *pm.Spec.PodMetricsEndpoints[0].Port != "http" {
		t.Errorf("the PodMonitor does not scrape the http port: %+v", pm.Spec.PodMetricsEndpoints)
	}
	if sel, err := labels.ValidatedSelectorFromSet(pm.Spec.Selector.MatchLabels); err != nil || !sel.Matches(labels.Set(dep.Spec.Template.Labels)) {
		t.Errorf("the PodMonitor selector %v does not select the Deployment's pods", pm.Spec.Selector.MatchLabels)
	}
	gated := false
	for _, c := range dep.Spec.Template.Spec.InitContainers {
		gated = gated || len(c.Args) >= 2 && reflect.DeepEqual(c.Args[:2], []string{"migrate", "check"})
	}
	if !gated {
		t.Error("no init container runs `migrate check`: new code could start on an old schema")
	}
	if job.Name != "" || job.GenerateName == "" {
		t.Errorf("the migrate Job has a fixed name %q: it cannot be created again with a new image (pod templates are immutable); use generateName", job.Name)
	}
	if job.Spec.TTLSecondsAfterFinished == nil {
		t.Error("the migrate Job sets no ttlSecondsAfterFinished: finished Jobs pile up")
	}
	if a := job.Spec.Template.Spec.Containers[0].Args; len(a) < 2 || !reflect.DeepEqual(a[:2], []string{"migrate", "up"}) {
		t.Errorf("the migrate Job runs %v", job.Spec.Template.Spec.Containers[0].Args)
	}
}

// rulesFile is the Prometheus rules file as plain data.
func rulesGroups(t *testing.T, path string) any {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Groups any `json:"groups"`
	}
	if err := yaml.UnmarshalStrict(data, &f); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return f.Groups
}

// Rule: the PrometheusRule carries exactly the groups of deploy/prometheus/iu-runner.rules.yml
// (the file promtool checks and tests), so prometheus-operator users get the tested rules.
// go test -run PrometheusRule -update rewrites it from the rules file.
func TestPrometheusRuleMatchesRulesFile(t *testing.T) {
	rulesPath := Artifact("IU_DEPLOY_RULES", "deploy", "prometheus", "iu-runner.rules.yml")
	want := rulesGroups(t, rulesPath)
	prPath := filepath.Join(k8sDir(), "prometheusrule.yaml")
	if *update {
		data, err := os.ReadFile(rulesPath)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(prPath, []byte(PrometheusRuleYAML(string(data))), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	data, err := os.ReadFile(prPath)
	if err != nil {
		t.Fatal(err)
	}
	var pr struct {
		Spec struct {
			Groups any `json:"groups"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(data, &pr); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(pr.Spec.Groups, want) {
		t.Fatalf("%s differs from %s: run `cd deploy/check && go test -run PrometheusRule -update`", prPath, rulesPath)
	}
}

// Rule: no pod takes its connection string from the environment: every container that
// runs iu-runner reads it with --database-url-file from a read-only mount of a secret
// volume whose files other users cannot read (defaultMode without other bits, at most
// 0440), made readable to the runner by the pod's fsGroup, as iu-runner's own rule for
// such files wants (root-owned, group read at most). A connection string in an
// environment variable is visible to every process of the container and to a crash dump.
func TestConnectionStringsAreSecretFiles(t *testing.T) {
	for _, p := range PodTemplates(manifests(t)) {
		secrets := map[string]*corev1.SecretVolumeSource{}
		for _, v := range p.Spec.Volumes {
			if v.Secret != nil {
				secrets[v.Name] = v.Secret
			}
		}
		sc := p.Spec.SecurityContext
		for _, c := range append(append([]corev1.Container{}, p.Spec.InitContainers...), p.Spec.Containers...) {
			for _, e := range c.EnvFrom {
				if e.SecretRef != nil {
					t.Errorf("%s container %s takes secret %s as environment variables", p.Where, c.Name, e.SecretRef.Name)
				}
			}
			for _, e := range c.Env {
				if e.Name == "DATABASE_URL" || e.Name == "PGPASSWORD" {
					t.Errorf("%s container %s sets %s in its environment", p.Where, c.Name, e.Name)
				}
			}
			file := ""
			for i, a := range c.Args {
				if v, ok := strings.CutPrefix(a, "--database-url-file="); ok {
					file = v
				} else if a == "--database-url-file" && i+1 < len(c.Args) {
					file = c.Args[i+1]
				}
			}
			if file == "" {
				t.Errorf("%s container %s: no --database-url-file", p.Where, c.Name)
				continue
			}
			var mounted *corev1.SecretVolumeSource
			for _, m := range c.VolumeMounts {
				if strings.HasPrefix(file, strings.TrimSuffix(m.MountPath, "/")+"/") && secrets[m.Name] != nil {
					if !m.ReadOnly {
						t.Errorf("%s container %s mounts %s writable", p.Where, c.Name, m.MountPath)
					}
					mounted = secrets[m.Name]
				}
			}
			switch {
			case mounted == nil:
				t.Errorf("%s container %s: --database-url-file %s is not on a secret volume", p.Where, c.Name, file)
			case mounted.DefaultMode == nil || *mounted.DefaultMode&0o337 != 0:
				mode := "unset (0644)"
				if mounted.DefaultMode != nil {
					mode = fmt.Sprintf("%04o", *mounted.DefaultMode)
				}
				t.Errorf("%s container %s: secret %s has defaultMode %s; want at most 0440 (iu-runner refuses files other users may read)",
					p.Where, c.Name, mounted.SecretName, mode)
			case sc == nil || sc.FSGroup == nil || sc.RunAsGroup == nil || *sc.FSGroup != *sc.RunAsGroup:
				t.Errorf("%s: no fsGroup equal to runAsGroup: the root-owned secret files are unreadable for the runner", p.Where)
			}
		}
	}
}
