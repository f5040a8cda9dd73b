package check

import (
	"debug/elf"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/moby/patternmatcher"
	"github.com/moby/patternmatcher/ignorefile"
)

// Rule: the image runs as a numeric, non-zero uid:gid (so the kubelet can verify
// runAsNonRoot), from a final stage with no shell or package manager to write with.
func TestDockerfileUser(t *testing.T) {
	st, err := ParseDockerfile(Artifact("IU_DEPLOY_DOCKERFILE", "deploy", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	user := FinalUser(st)
	uid, gid, _ := strings.Cut(user, ":")
	if n, ok := parseUID(uid); !ok || n == 0 {
		t.Errorf("final USER %q: want a numeric non-zero uid (a name cannot be verified as non-root by the kubelet)", user)
	}
	if gid != "" {
		if _, ok := parseUID(gid); !ok {
			t.Errorf("final USER %q: the group must be numeric too", user)
		}
	}
	final := st[len(st)-1]
	for _, in := range final.Instructions {
		if in.Keyword == "RUN" {
			t.Errorf("line %d: RUN in the final stage: the runtime image should be the static binary on a distroless base", in.Line)
		}
	}
}

// contextFiles copies what `docker build` would send (the files .dockerignore lets
// through, with Docker's own matcher) from root into dst.
func contextFiles(t *testing.T, root, dst string) int {
	t.Helper()
	f, err := os.Open(filepath.Join(root, ".dockerignore"))
	if err != nil {
		t.Fatalf("no .dockerignore at the build context's root: %v", err)
	}
	patterns, err := ignorefile.ReadAll(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	pm, err := patternmatcher.New(patterns)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if rel == "." {
			return nil
		}
		if d.IsDir() {
			if d.Name() == ".git" {
				return filepath.SkipDir
			}
			return nil
		}
		skip, err := pm.MatchesOrParentMatches(filepath.ToSlash(rel))
		if err != nil || skip || !d.Type().IsRegular() {
			return err
		}
		out := filepath.Join(dst, rel)
		if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
			return err
		}
		src, err := os.Open(p)
		if err != nil {
			return err
		}
		defer src.Close()
		w, err := os.Create(out)
		if err != nil {
			return err
		}
		defer w.Close()
		_, err = io.Copy(w, src)
		n++
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// Rule: the Dockerfile's build line, run on exactly the files .dockerignore sends, builds a
// static binary (no ELF interpreter: it runs on a base image without libc), and the
// context carries neither tests nor the repository's other files.
func TestDockerBuildIsStaticFromContext(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	st, err := ParseDockerfile(Artifact("IU_DEPLOY_DOCKERFILE", "deploy", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	var build string
	for _, s := range st[:len(st)-1] {
		for _, in := range s.Instructions {
			if in.Keyword == "RUN" && strings.Contains(in.Args, "go build") {
				build = in.Args
			}
		}
	}
	if build == "" {
		t.Fatal("no RUN ... go build in a build stage")
	}
	ctxDir := t.TempDir()
	n := contextFiles(t, Root(), ctxDir)
	for _, unwanted := range []string{"deploy/check/go.mod", "runbooks/README.md", "tests", ".ci/run"} {
		if _, err := os.Stat(filepath.Join(ctxDir, unwanted)); err == nil {
			t.Errorf("the build context carries %s", unwanted)
		}
	}
	out := filepath.Join(t.TempDir(), "out")
	// the RUN line as the builder would run it (sh -c, build arguments at their defaults)
	cmdline := strings.ReplaceAll(build, "/out/", out+"/")
	for _, arg := range []string{"${IU_VERSION}", "${IU_REVISION}"} {
		cmdline = strings.ReplaceAll(cmdline, arg, "")
	}
	cmd := exec.Command("/bin/sh", "-c", cmdline)
	cmd.Dir = ctxDir
	cmd.Env = os.Environ()
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the Dockerfile's build line fails on its %d-file context: %v\n%s\n%s", n, err, cmdline, b)
	}
	bin := filepath.Join(out, "iu-runner")
	ef, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer ef.Close()
	for _, p := range ef.Progs {
		if p.Type == elf.PT_INTERP {
			t.Fatal("the binary needs a dynamic loader: not static (CGO_ENABLED=0?)")
		}
	}
	if v, err := exec.Command(bin, "--version").Output(); err != nil || !strings.HasPrefix(string(v), "iu-runner ") {
		t.Fatalf("the built binary: %v %q", err, v)
	}
}
