package check

import (
	"fmt"
	"os"
	"strings"
)

// Instruction is one Dockerfile instruction: its keyword (upper case) and its arguments
// (continuation lines joined).
type Instruction struct {
	Line    int
	Keyword string
	Args    string
}

// Stage is one FROM ... stage.
type Stage struct {
	From         string
	Name         string
	Instructions []Instruction
}

// ParseDockerfile splits a Dockerfile into stages of instructions: comments and blank
// lines dropped, backslash continuations joined. Enough for the checks here (no heredocs).
func ParseDockerfile(path string) ([]Stage, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var stages []Stage
	var cur strings.Builder
	start := 0
	flush := func() error {
		text := strings.TrimSpace(cur.String())
		cur.Reset()
		if text == "" {
			return nil
		}
		kw, args, _ := strings.Cut(text, " ")
		in := Instruction{Line: start, Keyword: strings.ToUpper(kw), Args: strings.TrimSpace(args)}
		if in.Keyword == "FROM" {
			f := strings.Fields(in.Args)
			st := Stage{From: f[len(f)-1]}
			for i, x := range f {
				if strings.EqualFold(x, "AS") && i+1 < len(f) {
					st.From, st.Name = f[i-1], f[i+1]
				}
			}
			stages = append(stages, st)
			return nil
		}
		if len(stages) == 0 {
			if in.Keyword == "ARG" {
				return nil // global ARG before the first FROM
			}
			return fmt.Errorf("%s:%d: %s before FROM", path, in.Line, in.Keyword)
		}
		st := &stages[len(stages)-1]
		st.Instructions = append(st.Instructions, in)
		return nil
	}
	for i, l := range strings.Split(string(data), "\n") {
		t := strings.TrimSpace(l)
		if cur.Len() == 0 && (t == "" || strings.HasPrefix(t, "#")) {
			continue
		}
		if cur.Len() > 0 && strings.HasPrefix(t, "#") {
			continue // a comment inside a continued instruction
		}
		if cur.Len() == 0 {
			start = i + 1
		}
		if strings.HasSuffix(t, "\\") {
			cur.WriteString(strings.TrimSuffix(t, "\\") + " ")
			continue
		}
		cur.WriteString(t)
		if err := flush(); err != nil {
			return nil, err
		}
	}
	if err := flush(); err != nil {
		return nil, err
	}
	if len(stages) == 0 {
		return nil, fmt.Errorf("%s: no FROM", path)
	}
	return stages, nil
}

// FinalUser is the USER the image runs as: the last USER of the final stage ("" when none:
// root, or whatever the base image says).
func FinalUser(stages []Stage) string {
	u := ""
	for _, in := range stages[len(stages)-1].Instructions {
		if in.Keyword == "USER" {
			u = in.Args
		}
	}
	return u
}
