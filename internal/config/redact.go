package config

import (
	"errors"
	"regexp"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
)

// Passwords in connection strings. pgx masks the password in the connection string a
// parse error quotes, but only in the shapes its patterns know: `password = secret`
// (libpq allows blanks around '='), an escaped blank inside an unquoted value, or a
// quoted value with an escaped quote get through in part. The runner prints its errors
// to logs that are shipped elsewhere, so it masks them again itself, knowing the string
// it parsed.
var (
	// keyword=value form: the value of password or sslpassword is a quoted string
	// (backslash escapes) or a run of non-blanks (backslash escapes); any case.
	kvPassword = regexp.MustCompile(`(?i)((?:ssl)?password\s*=\s*)('(?:[^'\\]|\\.)*'?|(?:[^\s\\]|\\.)*)`)
	// URL form: the query parameters password=... and sslpassword=...
	urlQueryPassword = regexp.MustCompile(`(?i)([?&](?:ssl)?password=)([^&#]*)`)
)

const masked = "xxxxx"

// RedactErr returns err with the passwords of dsn masked in its message. A pgx parse error
// is rebuilt around our own masking of the connection string it quotes; any other error
// keeps its text with every password of dsn replaced. The result unwraps to the cause of
// a parse error (never to the error that holds the connection string).
func RedactErr(err error, dsn string) error {
	if err == nil {
		return nil
	}
	secrets := passwords(dsn)
	var pce *pgconn.ParseConfigError
	if errors.As(err, &pce) {
		// pgx's message with an empty connection string is "cannot parse ``: <what> (<cause>)"
		bare := *pce
		bare.ConnString = ""
		own := "cannot parse `" + RedactDSN(pce.ConnString) + "`" + strings.TrimPrefix(bare.Error(), "cannot parse ``")
		// keep what wraps the parse error, swap the parse error's own text for ours
		msg := strings.Replace(err.Error(), pce.Error(), own, 1)
		return &redacted{msg: scrub(msg, secrets), cause: pce.Unwrap()}
	}
	if msg := scrub(err.Error(), secrets); msg != err.Error() {
		return &redacted{msg: msg} // does not unwrap: the wrapped errors hold the password
	}
	return err
}

// redacted is an error whose message has been masked. It unwraps only to an error that
// never held the connection string (the cause of a parse error), so errors.As cannot
// reach the unmasked text.
type redacted struct {
	msg   string
	cause error
}

func (e *redacted) Error() string { return e.msg }
func (e *redacted) Unwrap() error { return e.cause }

// RedactDSN masks the passwords in a connection string, URL or keyword=value form,
// whether or not it parses.
func RedactDSN(dsn string) string {
	if scheme, rest, ok := strings.Cut(dsn, "://"); ok && (strings.EqualFold(scheme, "postgres") || strings.EqualFold(scheme, "postgresql")) {
		// userinfo ends at the last '@' before the path or query (an unencoded '@' in a
		// password is a broken URL, but the part before it is still secret)
		end := strings.IndexAny(rest, "/?#")
		if end < 0 {
			end = len(rest)
		}
		if at := strings.LastIndex(rest[:end], "@"); at >= 0 {
			if user, _, hasPW := strings.Cut(rest[:at], ":"); hasPW {
				rest = user + ":" + masked + rest[at:]
			}
		}
		return scheme + "://" + urlQueryPassword.ReplaceAllString(rest, "${1}"+masked)
	}
	return kvPassword.ReplaceAllString(dsn, "${1}"+masked)
}

// passwords lists the password values written in dsn, raw as written (they are what an
// error message would echo), longest first so a password containing another is masked whole.
func passwords(dsn string) []string {
	var out []string
	add := func(s string) {
		s = strings.TrimSpace(s)
		if s != "" && s != masked {
			out = append(out, s)
			if u := strings.Trim(s, "'"); u != s && u != "" {
				out = append(out, u)
			}
		}
	}
	if scheme, rest, ok := strings.Cut(dsn, "://"); ok && (strings.EqualFold(scheme, "postgres") || strings.EqualFold(scheme, "postgresql")) {
		end := strings.IndexAny(rest, "/?#")
		if end < 0 {
			end = len(rest)
		}
		if at := strings.LastIndex(rest[:end], "@"); at >= 0 {
			if _, pw, hasPW := strings.Cut(rest[:at], ":"); hasPW {
				add(pw)
			}
		}
		for _, m := range urlQueryPassword.FindAllStringSubmatch(rest, -1) {
			add(m[2])
		}
	} else {
		for _, m := range kvPassword.FindAllStringSubmatch(dsn, -1) {
			add(m[2])
		}
	}
	slices.SortFunc(out, func(a, b string) int { return len(b) - len(a) })
	return out
}

// scrub replaces every secret in msg.
func scrub(msg string, secrets []string) string {
	for _, s := range secrets {
		msg = strings.ReplaceAll(msg, s, masked)
	}
	return msg
}
