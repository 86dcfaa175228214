package discover

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// maxFile caps what discover reads of one file: crontabs and unit files are
// small, a huge one is not what it seems.
const maxFile = 4 << 20

// hostPath resolves p, a path on the host, to the file under root that
// holds it, following symbolic links of the last component as the host
// would: an absolute target is taken from root, not from this machine.
func hostPath(root, p string) string {
	for range 8 {
		full := filepath.Join(root, filepath.FromSlash(p))
		fi, err := os.Lstat(full)
		if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			return full
		}
		target, err := os.Readlink(full)
		if err != nil {
			return full
		}
		if !path.IsAbs(target) {
			target = path.Join(path.Dir(p), target)
		}
		p = target
	}
	return filepath.Join(root, filepath.FromSlash(p))
}

// linkTarget returns the host path a symbolic link at p points to, or "".
func linkTarget(root, p string) string {
	target, err := os.Readlink(filepath.Join(root, filepath.FromSlash(p)))
	if err != nil {
		return ""
	}
	if !path.IsAbs(target) {
		target = path.Join(path.Dir(p), target)
	}
	return target
}

// isDevNull reports a unit masked by a link to /dev/null.
func isDevNull(root, p string) bool {
	return linkTarget(root, p) == "/dev/null"
}

func readFile(root, p string) ([]byte, error) {
	f, err := os.Open(hostPath(root, p))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("not a regular file")
	}
	data, err := io.ReadAll(io.LimitReader(f, maxFile+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxFile {
		return nil, fmt.Errorf("larger than %d bytes", maxFile)
	}
	return data, nil
}

// readDir lists the names in the directory at host path p, sorted.
func readDir(root, p string) ([]string, error) {
	ents, err := os.ReadDir(hostPath(root, p))
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(ents))
	for _, e := range ents {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	return names, nil
}

func exists(root, p string) bool {
	_, err := os.Stat(hostPath(root, p))
	return err == nil
}

// unreadable is the finding for a file discover could not read.
func unreadable(p string, err error) Finding {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err // the path under --root says nothing the host path does not
	}
	return Finding{File: p, Kind: KindUnreadable, Severity: Warning,
		Message: fmt.Sprintf("cannot read: %v", err),
		Fix:     "run jobwatch discover as root, or check the file's permissions"}
}

func isNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }

func isRegular(root, p string) bool {
	fi, err := os.Stat(hostPath(root, p))
	return err == nil && fi.Mode().IsRegular()
}

// tmpfilesDirs are the tmpfiles.d directories, highest precedence first.
var tmpfilesDirs = []string{"/etc/tmpfiles.d", "/run/tmpfiles.d", "/usr/lib/tmpfiles.d", "/lib/tmpfiles.d"}

// readTmpfiles returns the directories that tmpfiles.d(5) rules clean by
// age (a line of type d, D, e, v, q or Q with an age), sorted.
func readTmpfiles(root string, notes *[]Finding) []string {
	files := map[string]string{} // name -> host path, first directory wins
	for _, d := range tmpfilesDirs {
		names, err := readDir(root, d)
		if err != nil {
			continue
		}
		for _, n := range names {
			if _, ok := files[n]; !ok && strings.HasSuffix(n, ".conf") {
				files[n] = path.Join(d, n)
			}
		}
	}
	set := map[string]bool{}
	for _, p := range files {
		data, err := readFile(root, p)
		if err != nil {
			*notes = append(*notes, unreadable(p, err))
			continue
		}
		for _, line := range strings.Split(string(data), "\n") {
			f := strings.Fields(line)
			if len(f) < 6 || strings.HasPrefix(f[0], "#") {
				continue
			}
			switch strings.TrimRight(f[0], "!-=~^+") {
			case "d", "D", "e", "v", "q", "Q":
			default:
				continue
			}
			if f[5] != "-" && f[5] != "0" && path.IsAbs(f[1]) {
				set[path.Clean(f[1])] = true
			}
		}
	}
	out := make([]string, 0, len(set))
	for d := range set {
		out = append(out, d)
	}
	sort.Strings(out)
	return out
}
