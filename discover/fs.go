package discover

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
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

// errNotRegular is why a named pipe, a socket, a device or a directory
// is not read: cron and systemd read regular files only, and opening a
// named pipe would wait for a writer.
var errNotRegular = errors.New("not a regular file")

// tooLargeError is a file over maxFile: its lines before the limit are
// read, the rest left out.
type tooLargeError struct{ size int64 }

func (e *tooLargeError) Error() string {
	mib := math.Ceil(float64(e.size)*10/(1<<20)) / 10 // never rounded down to the limit
	return fmt.Sprintf("too large (%s MiB, limit %d MiB)", strconv.FormatFloat(mib, 'f', -1, 64), maxFile>>20)
}

// openRegular opens the file at host path p for reading if it is a regular
// file, without ever blocking: the open is non-blocking (a named pipe with
// no writer cannot hang it), does not follow a link left at the end of the
// path (hostPath has resolved those inside root), and the type is checked
// on the open file, so nothing can be swapped in between.
func openRegular(root, p string) (*os.File, int64, error) {
	name := hostPath(root, p)
	fd, err := syscall.Open(name, syscall.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOFOLLOW|syscall.O_CLOEXEC|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, 0, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		syscall.Close(fd)
		return nil, 0, &fs.PathError{Op: "stat", Path: name, Err: err}
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		syscall.Close(fd)
		return nil, 0, fmt.Errorf("%w (%s)", errNotRegular, fileKind(st.Mode))
	}
	// O_NONBLOCK means nothing to a regular file; cleared, the runtime
	// reads it as the plain file it is.
	if err := syscall.SetNonblock(fd, false); err != nil {
		syscall.Close(fd)
		return nil, 0, &fs.PathError{Op: "fcntl", Path: name, Err: err}
	}
	return os.NewFile(uintptr(fd), name), st.Size, nil
}

// fileKind names the type of a file that is not regular.
func fileKind(mode uint32) string {
	switch mode & syscall.S_IFMT {
	case syscall.S_IFIFO:
		return "named pipe"
	case syscall.S_IFSOCK:
		return "socket"
	case syscall.S_IFCHR:
		return "character device"
	case syscall.S_IFBLK:
		return "block device"
	case syscall.S_IFDIR:
		return "directory"
	}
	return "unknown type"
}

// readFile reads the regular file at host path p (see openRegular). A file
// over maxFile returns its lines before the limit with a *tooLargeError.
func readFile(root, p string) ([]byte, error) {
	f, size, err := openRegular(root, p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxFile+1))
	if err != nil {
		return nil, fmt.Errorf("read: %w", err)
	}
	if len(data) <= maxFile {
		return data, nil
	}
	data = data[:bytes.LastIndexByte(data[:maxFile], '\n')+1] // whole lines only
	return data, &tooLargeError{size: max(size, maxFile+1)}
}

// readNoting reads the file at host path p for a reader that goes on
// without it: why it cannot be read is added to notes (a file that does not
// exist, or no longer, is left out silently), and ok says whether there are
// lines to read, the first lines of a file too large among them.
func readNoting(root, p string, notes *[]Finding) (data []byte, ok bool) {
	data, err := readFile(root, p)
	if err != nil && !isNotExist(err) {
		*notes = append(*notes, unreadable(p, err))
	}
	return data, data != nil
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

// unreadable is the finding for a file discover could not read, or not
// all of.
func unreadable(p string, err error) Finding {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err // the path under --root says nothing the host path does not
	}
	f := Finding{File: p, Kind: KindUnreadable, Severity: Warning,
		Message: fmt.Sprintf("cannot read: %v", err),
		Fix:     "run jobwatch discover as root, or check the file's permissions"}
	var big *tooLargeError
	switch {
	case errors.As(err, &big):
		f.Message = fmt.Sprintf("read in part: %v: the lines after the first %d MiB are left out", err, maxFile>>20)
		f.Fix = "check what wrote it: crontabs, unit files and tmpfiles.d rules are small"
	case errors.Is(err, errNotRegular):
		f.Fix = "cron and systemd read regular files only: replace it with one, or remove it"
	}
	return f
}

func isNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }

func isDir(root, p string) bool {
	fi, err := os.Stat(hostPath(root, p))
	return err == nil && fi.IsDir()
}

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
		data, ok := readNoting(root, p, notes)
		if !ok {
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

// ReadRegular reads the file name as discover reads the host's (a --merge
// config): never blocking on a named pipe, refusing what is not a regular
// file, and at most 4 MiB.
func ReadRegular(name string) ([]byte, error) {
	data, err := readFile("", name)
	if err != nil {
		return nil, err
	}
	return data, nil
}
