package check

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"
	"sigs.k8s.io/yaml"
)

// Manifest is one decoded Kubernetes object and the file it came from.
type Manifest struct {
	File   string
	Kind   string
	Object any // *appsv1.Deployment, *batchv1.Job, ...
}

// newObject returns an empty typed object for apiVersion and kind; only the kinds this
// repository ships are known, so a typo in either is an error too.
func newObject(apiVersion, kind string) (any, error) {
	switch apiVersion + "/" + kind {
	case "v1/Namespace":
		return &corev1.Namespace{}, nil
	case "apps/v1/Deployment":
		return &appsv1.Deployment{}, nil
	case "batch/v1/Job":
		return &batchv1.Job{}, nil
	case "batch/v1/CronJob":
		return &batchv1.CronJob{}, nil
	case "policy/v1/PodDisruptionBudget":
		return &policyv1.PodDisruptionBudget{}, nil
	case "monitoring.coreos.com/v1/PodMonitor":
		return &monitoringv1.PodMonitor{}, nil
	case "monitoring.coreos.com/v1/PrometheusRule":
		return &monitoringv1.PrometheusRule{}, nil
	}
	return nil, fmt.Errorf("unknown apiVersion/kind %s %s", apiVersion, kind)
}

// DecodeStrict decodes one YAML manifest into its official Go type, refusing unknown and
// duplicate fields (what `kubectl apply --validate=strict` refuses).
func DecodeStrict(file string, data []byte) (Manifest, error) {
	var head metav1.TypeMeta
	if err := yaml.Unmarshal(data, &head); err != nil {
		return Manifest{}, fmt.Errorf("%s: %w", file, err)
	}
	obj, err := newObject(head.APIVersion, head.Kind)
	if err != nil {
		return Manifest{}, fmt.Errorf("%s: %w", file, err)
	}
	if err := yaml.UnmarshalStrict(data, obj); err != nil {
		return Manifest{}, fmt.Errorf("%s: strict decoding into %T: %w", file, obj, err)
	}
	return Manifest{File: file, Kind: head.Kind, Object: obj}, nil
}

// LoadManifests decodes every *.yaml file of dir (one object per file; a file with several
// documents is refused so that each artifact stays addressable on its own).
func LoadManifests(dir string) ([]Manifest, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	if len(files) == 0 {
		return nil, fmt.Errorf("no *.yaml manifests in %s", dir)
	}
	var out []Manifest
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		if bytes.Contains(data, []byte("\n---")) {
			return nil, fmt.Errorf("%s: one object per file, please", f)
		}
		m, err := DecodeStrict(filepath.Base(f), data)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

// PodTemplate is a pod spec a workload manifest will create, with where it came from.
type PodTemplate struct {
	Where string
	Meta  metav1.ObjectMeta
	Spec  corev1.PodSpec
}

// PodTemplates returns the pod templates of the workloads among ms.
func PodTemplates(ms []Manifest) []PodTemplate {
	var out []PodTemplate
	for _, m := range ms {
		switch o := m.Object.(type) {
		case *appsv1.Deployment:
			out = append(out, PodTemplate{m.File + " " + o.Name, o.Spec.Template.ObjectMeta, o.Spec.Template.Spec})
		case *batchv1.Job:
			out = append(out, PodTemplate{m.File + " " + o.Name + o.GenerateName, o.Spec.Template.ObjectMeta, o.Spec.Template.Spec})
		case *batchv1.CronJob:
			out = append(out, PodTemplate{m.File + " " + o.Name, o.Spec.JobTemplate.Spec.Template.ObjectMeta, o.Spec.JobTemplate.Spec.Template.Spec})
		}
	}
	return out
}

// Restricted evaluates a pod against the Pod Security "restricted" profile, latest version,
// with the admission plugin's own checks; it returns the reasons it would be forbidden.
func Restricted(p PodTemplate) ([]string, error) {
	ev, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	if err != nil {
		return nil, err
	}
	lv := api.LevelVersion{Level: api.LevelRestricted, Version: api.LatestVersion()}
	var reasons []string
	for _, r := range ev.EvaluatePod(lv, &p.Meta, &p.Spec) {
		if !r.Allowed {
			reasons = append(reasons, r.ForbiddenReason+": "+r.ForbiddenDetail)
		}
	}
	return reasons, nil
}

// VerifyRunAsNonRoot applies the kubelet's rule to every container of p: where
// runAsNonRoot is true, the uid must be known to be non-zero — from runAsUser, or else from
// the image's USER, which must then be numeric ("image has non-numeric user ..., cannot
// verify user is non-root" otherwise). imageUser is the Dockerfile's final USER.
func VerifyRunAsNonRoot(p PodTemplate, imageUser string) []string {
	var errs []string
	all := append(append([]corev1.Container{}, p.Spec.InitContainers...), p.Spec.Containers...)
	for _, c := range all {
		nonRoot, uid := false, (*int64)(nil)
		if sc := p.Spec.SecurityContext; sc != nil {
			if sc.RunAsNonRoot != nil {
				nonRoot = *sc.RunAsNonRoot
			}
			uid = sc.RunAsUser
		}
		if sc := c.SecurityContext; sc != nil {
			if sc.RunAsNonRoot != nil {
				nonRoot = *sc.RunAsNonRoot
			}
			if sc.RunAsUser != nil {
				uid = sc.RunAsUser
			}
		}
		if !nonRoot {
			continue
		}
		if uid != nil {
			if *uid == 0 {
				errs = append(errs, fmt.Sprintf("%s container %s: runAsNonRoot with runAsUser 0: the kubelet refuses to start it", p.Where, c.Name))
			}
			continue
		}
		user, _, _ := strings.Cut(imageUser, ":")
		n, numeric := parseUID(user)
		switch {
		case user == "":
			errs = append(errs, fmt.Sprintf("%s container %s: runAsNonRoot, no runAsUser, and the image sets no USER (root): the kubelet refuses to start it", p.Where, c.Name))
		case !numeric:
			errs = append(errs, fmt.Sprintf("%s container %s: image has non-numeric user (%s), cannot verify user is non-root: the kubelet refuses to start it (set runAsUser, or a numeric USER)", p.Where, c.Name, user))
		case n == 0:
			errs = append(errs, fmt.Sprintf("%s container %s: runAsNonRoot and the image runs as uid 0", p.Where, c.Name))
		}
	}
	return errs
}

func parseUID(s string) (int64, bool) {
	if s == "" {
		return 0, false
	}
	var n int64
	for _, r := range s {
		if r < '0' || r > '9' {
			return 0, false
		}
		n = n*10 + int64(r-'0')
	}
	return n, true
}
