package config

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
)

// MaxSecretFileBytes bounds what ReadSecretFile reads: a connection string is a few
// hundred bytes, and a path pointed at a log or a device by mistake must not be read whole.
const MaxSecretFileBytes = 64 << 10

// ReadSecretFile reads a connection string from path (--database-url-file,
// DATABASE_URL_FILE). The rules are libpq's for the files that hold its secrets, so an
// operator who has set up a password file or an SSL key already meets them:
//
//   - the file must be a regular file (a symlink to one is followed, as Kubernetes
//     secret volumes and systemd credentials use them);
//   - no permission for other users at all, and none for the group either, unless the
//     file is owned by root, when the group may read it (0640): libpq's rule for sslkey,
//     which is also what a Kubernetes secret volume with fsGroup gives (root-owned, 0440);
//     anything looser is refused with the mode and the chmod that fixes it, never read;
//   - surrounding whitespace (the trailing newline of an editor or `echo`) is trimmed;
//     an empty file, a file of several lines or a shell assignment (DATABASE_URL=...) is
//     refused.
//
// No error quotes the file's content: it holds a password.
func ReadSecretFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("reading the connection string file %s: %w", path, err)
	}
	defer f.Close()
	fi, err := f.Stat() // the opened file itself: no race with a rename between check and read
	if err != nil {
		return "", fmt.Errorf("reading the connection string file %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("the connection string file %s is not a regular file (%s)", path, fi.Mode().Type())
	}
	if err := secretFileMode(fi); err != nil {
		return "", fmt.Errorf("the connection string file %s %w", path, err)
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxSecretFileBytes+1))
	if err != nil {
		return "", fmt.Errorf("reading the connection string file %s: %w", path, err)
	}
	if len(b) > MaxSecretFileBytes {
		return "", fmt.Errorf("the connection string file %s is larger than %d bytes: is it the right file?", path, MaxSecretFileBytes)
	}
	s := strings.TrimSpace(string(b))
	switch {
	case s == "":
		return "", fmt.Errorf("the connection string file %s is empty", path)
	case strings.ContainsAny(s, "\r\n"):
		return "", fmt.Errorf("the connection string file %s has more than one line; it must hold the connection string alone", path)
	case strings.HasPrefix(s, "DATABASE_URL="), strings.HasPrefix(s, "export "):
		return "", fmt.Errorf("the connection string file %s holds a shell assignment; it must hold the connection string alone (postgres://... or host=... dbname=...)", path)
	}
	return s, nil
}

// errLoosePermissions is what secretFileMode refuses (tests match it with errors.Is).
var errLoosePermissions = errors.New("is readable by other users")

// secretFileMode applies the permission rule of ReadSecretFile.
func secretFileMode(fi fs.FileInfo) error {
	perm := fi.Mode().Perm()
	uid, known := fileOwner(fi)
	rootOwned := known && uid == 0
	switch {
	case perm&0o007 != 0:
		return fmt.Errorf("%w (mode %04o gives other users access): chmod 0600 it (0640 when owned by root)", errLoosePermissions, perm)
	case rootOwned && perm&0o030 != 0:
		return fmt.Errorf("%w (mode %04o lets the group write or execute it): chmod 0640 it", errLoosePermissions, perm)
	case !rootOwned && perm&0o070 != 0:
		return fmt.Errorf("%w (mode %04o gives the group access and the file is not owned by root): chmod 0600 it, or make it root's with mode 0640",
			errLoosePermissions, perm)
	}
	return nil
}
