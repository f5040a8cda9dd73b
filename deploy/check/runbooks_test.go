package check

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var (
	fence   = regexp.MustCompile("(?ms)^```([A-Za-z0-9_-]*)\\n(.*?)^```")
	cronJob = regexp.MustCompile(`(?m)^\s*(@\w+|[0-9*/,-]+\s+[0-9*/,-]+\s+[0-9*/,-]+\s+[0-9*/,-]+\s+[0-9*/,-]+)\s+\S+\s+\S`)
	copied  = []*regexp.Regexp{
		regexp.MustCompile(`(?m)^\s*apiVersion:`),                   // a Kubernetes manifest
		regexp.MustCompile(`(?m)^\s*groups:`),                       // a Prometheus rules file
		regexp.MustCompile(`(?m)^\s*- job_name:`),                   // a scrape config
		regexp.MustCompile(`(?m)^\[(Unit|Service|Timer|Install)\]`), // a systemd unit
		regexp.MustCompile(`(?m)^(FROM|ENTRYPOINT)\s`),              // a Dockerfile
		regexp.MustCompile(`(?m)^DATABASE_URL=`),                    // the env file
	}
)

// Rule: the runbooks point at the artifacts under deploy/ instead of carrying copies of
// them (a copy is what drifted before): every artifact is linked from a runbook, and no
// runbook has a code block that is a manifest, a unit, a crontab line, a Dockerfile, a
// rules file or the env file.
func TestRunbooksLinkArtifactsAndCarryNoCopies(t *testing.T) {
	dir := Artifact("IU_DEPLOY_RUNBOOKS_DIR", "runbooks")
	mds, _ := filepath.Glob(filepath.Join(dir, "*.md"))
	if len(mds) == 0 {
		t.Fatalf("no runbooks in %s", dir)
	}
	var all strings.Builder
	for _, md := range mds {
		data, err := os.ReadFile(md)
		if err != nil {
			t.Fatal(err)
		}
		all.Write(data)
		for _, m := range fence.FindAllStringSubmatch(string(data), -1) {
			lang, body := m[1], m[2]
			bad := lang == "dockerfile" || lang == "ini" || lang == "cron" || lang == "systemd" || cronJob.MatchString(body)
			for _, re := range copied {
				bad = bad || re.MatchString(body)
			}
			if bad {
				first, _, _ := strings.Cut(strings.TrimSpace(body), "\n")
				t.Errorf("%s: a code block (```%s) copies a deploy artifact, starting %q: link the file under deploy/ instead", filepath.Base(md), lang, first)
			}
		}
	}
	links := all.String()
	root := Root()
	var artifacts []string
	_ = filepath.WalkDir(filepath.Join(root, "deploy"), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() {
			if rel == filepath.Join("deploy", "check") {
				return filepath.SkipDir
			}
			return nil
		}
		if filepath.Base(p) != "README.md" {
			artifacts = append(artifacts, filepath.ToSlash(rel))
		}
		return nil
	})
	if len(artifacts) < 10 {
		t.Fatalf("only %d artifacts under deploy/", len(artifacts))
	}
	for _, a := range append(artifacts, ".dockerignore") {
		if !strings.Contains(links, "](../"+a+")") {
			t.Errorf("no runbook links %s (as ](../%s))", a, a)
		}
	}
}
