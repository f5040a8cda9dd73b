package sqlgen

import (
	"bytes"
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// A release after the first ships its functions and views as one generated migration that
// re-applies every one of them from the sources (`<NNN>_functions.sql *` in generated.txt),
// as PgQ upgrades by re-applying every function file. It starts from the previous
// release's function migrations, which are history and stay as they are:
//
//	Up:   the previous release's functions and views that are gone, dropped; a function
//	      whose arguments or result changed, dropped just before it is created again (CREATE
//	      OR REPLACE cannot change them); every function and view created or replaced from
//	      its source; the grants the previous release had and this one has not, revoked;
//	      every grant of grants.sql; the package's list of its functions.
//	Down: what this release added, dropped, and its new grants revoked; then the previous
//	      release's function migrations' Up, as they were, which replaces every body, view,
//	      grant and the list with the previous release's.
//
// A change that needs more (a view whose columns change, a function other objects depend
// on whose result changes) fails in the generated migration's test run: it belongs in a
// hand-written migration before this one.

var (
	prevFunctionRE = regexp.MustCompile(`(?m)^REVOKE ALL ON FUNCTION (.+) FROM PUBLIC;$`)
	prevViewRE     = regexp.MustCompile(`(?im)^CREATE\s+OR\s+REPLACE\s+VIEW\s+([A-Za-z_][\w]*\.[A-Za-z_][\w]*)`)
	prevGrantRE    = regexp.MustCompile(`(?m)^GRANT .+ TO .+;$`)
	// returnsRE finds a function's result in its CREATE statement (comments stripped).
	returnsRE = regexp.MustCompile(`(?is)\)\s*RETURNS\s+(.+?)\s+(?:LANGUAGE|AS|SET|SECURITY|STABLE|IMMUTABLE|VOLATILE|STRICT|PARALLEL|COST|ROWS|CALLED|LEAKPROOF|NOT|WINDOW|RETURNS\s+NULL)\b`)
)

// previous is the state a re-applying migration starts from: the previous release's
// function migrations, as they are.
type previous struct {
	files     []string
	up        []string          // each file's Up section, in order
	functions map[string]string // signature -> its declaration (arguments and result)
	views     map[string]bool
	grants    map[string]bool // normalized GRANT statements
}

// previousOf reads the previous release of manifest entry i: the last re-applying entry
// before it, or, when there is none, every entry before it (the first release).
func (t *Tree) previousOf(i int) (*previous, error) {
	var entries []Entry
	for j := i - 1; j >= 0; j-- {
		if isFullReapply(t.Manifest[j]) {
			entries = []Entry{t.Manifest[j]}
			break
		}
		entries = append([]Entry{t.Manifest[j]}, entries...)
	}
	if len(entries) == 0 {
		return nil, fmt.Errorf("%s re-applies every function, but no release comes before it in generated.txt", t.Manifest[i].File)
	}
	p := &previous{functions: map[string]string{}, views: map[string]bool{}, grants: map[string]bool{}}
	for _, e := range entries {
		b, err := t.released(e.File)
		if err != nil {
			return nil, err
		}
		text := string(b)
		upAt, downAt := strings.Index(text, "-- +goose Up\n"), strings.Index(text, "\n-- +goose Down\n")
		if upAt < 0 || downAt < upAt {
			return nil, fmt.Errorf("%s: no goose Up and Down sections", e.File)
		}
		up := text[upAt+len("-- +goose Up\n") : downAt]
		p.files = append(p.files, e.File)
		p.up = append(p.up, up)
		for _, m := range prevFunctionRE.FindAllStringSubmatch(up, -1) {
			p.functions[m[1]] = ""
		}
		for _, m := range prevViewRE.FindAllStringSubmatch(up, -1) {
			p.views[m[1]] = true
		}
		for _, g := range prevGrantRE.FindAllString(up, -1) {
			p.grants[normalizeSpace(g)] = true
		}
		for _, st := range SplitStatements(up) {
			body := strings.TrimSpace(stripComments(st))
			m := createRE.FindStringSubmatch(body)
			if m == nil || !strings.EqualFold(m[1], "FUNCTION") {
				continue
			}
			args, err := inputArgs(body[len(m[0]):])
			if err != nil {
				return nil, fmt.Errorf("%s: %s: %w", e.File, m[2], err)
			}
			p.functions[m[2]+"("+strings.Join(args, ", ")+")"] = declaration(body)
		}
	}
	return p, nil
}

// declaration is what CREATE OR REPLACE FUNCTION cannot change: the parameter list (names,
// modes, types, defaults) and the result, whitespace-normalized.
func declaration(create string) string {
	m := createRE.FindStringSubmatchIndex(create)
	if m == nil {
		return ""
	}
	rest := create[m[1]:]
	depth, end := 0, -1
	for i, r := range rest {
		if r == '(' {
			depth++
		} else if r == ')' {
			depth--
			if depth == 0 {
				end = i
				break
			}
		}
	}
	if end < 0 {
		return ""
	}
	result := ""
	if r := returnsRE.FindStringSubmatch(rest[end:]); r != nil {
		result = r[1]
	}
	return normalizeSpace(rest[:end+1]) + " RETURNS " + normalizeSpace(result)
}

func normalizeSpace(s string) string { return strings.Join(strings.Fields(s), " ") }

// renderReapply renders manifest entry i, a release's function migration that re-applies
// every function and view (see the top of this file).
func (t *Tree) renderReapply(i int) ([]byte, error) {
	prev, err := t.previousOf(i)
	if err != nil {
		return nil, err
	}
	// every area, in the order the first release generated them
	var areas []string
	seen := map[string]bool{}
	for _, e := range t.Manifest[:i] {
		for _, a := range e.Sources {
			if a != "grants" && a != "*" && !seen[a] {
				seen[a] = true
				areas = append(areas, a)
			}
		}
	}
	var sources []*Source
	current := map[string]Created{}
	for _, a := range areas {
		for _, s := range t.Areas[a] {
			sources = append(sources, s)
			for _, c := range s.Creates {
				current[c.Signature] = c
			}
		}
	}
	currentDecl := map[string]string{}
	for _, s := range sources {
		for _, st := range s.Statements {
			body := strings.TrimSpace(stripComments(st))
			m := createRE.FindStringSubmatch(body)
			if m == nil || !strings.EqualFold(m[1], "FUNCTION") {
				continue
			}
			args, err := inputArgs(body[len(m[0]):])
			if err != nil {
				return nil, err
			}
			currentDecl[m[2]+"("+strings.Join(args, ", ")+")"] = declaration(body)
		}
	}
	grants := map[string]bool{}
	for _, g := range t.Grants {
		grants[normalizeSpace(stripComments(g))] = true
	}

	var b, up, down bytes.Buffer
	b.WriteString(GeneratedHeader)
	fmt.Fprintf(&b, "-- Sources: every area (%s) and grants.sql, re-applied over the previous release (%s).\n",
		strings.Join(areas, ", "), strings.Join(prev.files, ", "))
	b.WriteString("-- Down gives back the previous release's functions, views and grants exactly.\n\n")

	up.WriteString("SET LOCAL check_function_bodies = off;\n\n")
	var gone []string
	for v := range prev.views {
		if _, ok := current[v]; !ok {
			gone = append(gone, "DROP VIEW IF EXISTS "+v+";")
		}
	}
	sort.Strings(gone)
	var goneFns []string
	for f := range prev.functions {
		if _, ok := current[f]; !ok && f != PackageFunctionsName+"()" {
			goneFns = append(goneFns, "DROP FUNCTION IF EXISTS "+f+";")
		}
	}
	sort.Strings(goneFns)
	// IF EXISTS: this Up is also replayed, as it was, by the next release's Down, on a
	// database where these are long gone.
	if len(gone)+len(goneFns) > 0 {
		up.WriteString("-- gone since the previous release\n")
		for _, d := range append(gone, goneFns...) {
			up.WriteString(d + "\n")
		}
		up.WriteString("\n")
	}
	drops := writeSources(&up, sources, func(c Created) string {
		if c.Kind != KindFunction {
			return ""
		}
		old, had := prev.functions[c.Signature]
		if had && old != "" && old != currentDecl[c.Signature] {
			return "-- its arguments or result changed: CREATE OR REPLACE cannot change them\nDROP FUNCTION " + c.Signature + ";"
		}
		return ""
	})
	up.WriteString("-- sql/grants.sql\n")
	var revoked []string
	for g := range prev.grants {
		if !grants[g] {
			m := grantRE.FindStringSubmatch(g)
			revoked = append(revoked, "REVOKE "+strings.TrimSpace(m[1])+" FROM "+strings.TrimSpace(m[2])+";")
		}
	}
	sort.Strings(revoked)
	for _, r := range revoked {
		up.WriteString(r + "\n")
	}
	for _, g := range t.Grants {
		up.WriteString(g + "\n")
	}
	up.WriteString("\n")
	up.WriteString(t.packageFunctions())

	// Down: what is new goes, then the previous release's Up as it was.
	down.WriteString("SET LOCAL check_function_bodies = off;\n")
	for _, g := range t.Grants {
		n := normalizeSpace(stripComments(g))
		if !prev.grants[n] {
			m := grantRE.FindStringSubmatch(n)
			down.WriteString("REVOKE " + strings.TrimSpace(m[1]) + " FROM " + strings.TrimSpace(m[2]) + ";\n")
		}
	}
	for k := len(drops) - 1; k >= 0; k-- {
		d := drops[k]
		sig := strings.TrimSuffix(strings.TrimPrefix(strings.TrimPrefix(d, "DROP FUNCTION "), "DROP VIEW "), ";")
		_, hadFn := prev.functions[sig]
		old, _ := prev.functions[sig]
		changed := hadFn && old != "" && old != currentDecl[sig]
		if (!hadFn && !prev.views[sig]) || changed {
			down.WriteString(d + "\n")
		}
	}
	for k, u := range prev.up {
		fmt.Fprintf(&down, "\n-- the previous release: %s\n", prev.files[k])
		down.WriteString(strings.Replace(u, "SET LOCAL check_function_bodies = off;\n", "", 1))
	}

	b.WriteString("-- +goose Up\n")
	b.Write(bytes.TrimRight(up.Bytes(), "\n"))
	b.WriteString("\n\n-- +goose Down\n")
	b.Write(bytes.TrimRight(down.Bytes(), "\n"))
	b.WriteString("\n")
	return b.Bytes(), nil
}
