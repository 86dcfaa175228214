// Package packaging holds the tests of jobwatch's release archives and
// packages (make release, make deb, make rpm) and of the systemd unit they
// install; the files themselves are beside this one (docs/install.md).
package packaging

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jobwatch/jobwatch/internal/testsupport/testproc"
)

// maxExposure is the highest `systemd-analyze security` exposure level the
// unit may have (issue 27).
const maxExposure = 2.5

// shared is a directory the tests of one run share, so that the package is
// built once for TestDeb and TestInstall.
var shared string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "jobwatch-packaging-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	shared = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// command runs name with args in the repository's root and returns its
// standard output; it fails the test with both outputs when it fails.
func command(t *testing.T, env []string, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = ".."
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s%s", name, strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

// need skips the test under go test -short and fails it when cmd, an
// outside program it starts, is missing (testproc.Program).
func need(t *testing.T, cmd, pkg string) {
	t.Helper()
	testproc.Program(t, cmd, pkg)
}

func TestDebVersion(t *testing.T) {
	for _, tc := range []struct{ describe, want string }{
		{"v0.1.0", "0.1.0"},
		{"v1.12.3", "1.12.3"},
		{"v0.1.0-3-gabc1234", "0.1.0+3.gabc1234"},
		{"v0.1.0-rc.1", "0.1.0~rc.1"},
		{"v0.1.0-rc.1-2-gabc1234", "0.1.0~rc.1+2.gabc1234"},
		{"abc1234", "0.0.0~gitabc1234"},
		{"abc1234-dirty", "0.0.0~gitabc1234+dirty"},
		{"v0.2.0-dirty", "0.2.0+dirty"},
		{"v0.1.0-3-gabc1234-dirty", "0.1.0+3.gabc1234+dirty"},
	} {
		t.Run(tc.describe, func(t *testing.T) {
			got := strings.TrimSpace(command(t, nil, "packaging/debversion.sh", tc.describe))
			if got != tc.want {
				t.Errorf("debversion.sh %s = %q, want %q", tc.describe, got, tc.want)
			}
		})
	}
	// Their order is the order of the releases, as dpkg compares them.
	if _, err := exec.LookPath("dpkg"); err != nil {
		return
	}
	order := []string{"0.0.0~gitabc1234", "0.1.0~rc.1", "0.1.0~rc.1+2.gabc1234", "0.1.0", "0.1.0+3.gabc1234", "0.1.0+10.gabc1234", "0.1.1"}
	for i := 1; i < len(order); i++ {
		if err := exec.Command("dpkg", "--compare-versions", order[i-1], "lt", order[i]).Run(); err != nil {
			t.Errorf("dpkg: %s is not older than %s", order[i-1], order[i])
		}
	}
}

// treeVersion is the version of the tree as every build shows it: the
// packages', the archives' names, jobwatch --version and
// jobwatch_build_info (Debian's spelling of git describe).
func treeVersion(t *testing.T) string {
	t.Helper()
	describe := strings.TrimSpace(command(t, nil, "git", "describe", "--tags", "--always", "--dirty"))
	return strings.TrimSpace(command(t, nil, "packaging/debversion.sh", describe))
}

// unitSettings reads a unit file's [Service] section: each key with its
// values, in order (a key may be given more than once).
func unitSettings(t *testing.T, path string) map[string][]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	settings := map[string][]string{}
	section := ""
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "["):
			section = line
		case section == "[Service]":
			k, v, ok := strings.Cut(line, "=")
			if !ok {
				t.Fatalf("%s: %q is no setting", path, line)
			}
			settings[k] = append(settings[k], v)
		}
	}
	return settings
}

// TestUnitSecurity: the unit scores maxExposure or less in systemd-analyze
// security, keeps every setting jobwatch needs to do its work, and each of
// its [Service] settings is explained in docs/install.md.
func TestUnitSecurity(t *testing.T) {
	need(t, "systemd-analyze", "systemd")
	out := command(t, nil, "systemd-analyze", "security", "--offline=true", "--no-pager", "packaging/jobwatch.service")
	m := regexp.MustCompile(`Overall exposure level for jobwatch\.service: ([0-9.]+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no exposure level in systemd-analyze security's output:\n%s", out)
	}
	exposure, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("exposure level %.1f (at most %.1f)", exposure, maxExposure)
	if exposure > maxExposure {
		t.Errorf("exposure level %.1f, want at most %.1f:\n%s", exposure, maxExposure, out)
	}

	s := unitSettings(t, "jobwatch.service")
	get := func(k string) string { return strings.Join(s[k], " ") }
	for k, want := range map[string]string{
		"User":                    "jobwatch",
		"Group":                   "jobwatch",
		"SupplementaryGroups":     "systemd-journal adm",      // the journal, /var/log
		"AmbientCapabilities":     "CAP_DAC_READ_SEARCH",      // crontabs: 0600 in a 1730 spool
		"CapabilityBoundingSet":   "CAP_DAC_READ_SEARCH",      // and nothing more
		"ProtectHome":             "read-only",                // run logs in home directories
		"StateDirectory":          "jobwatch",                 // /var/lib/jobwatch
		"StateDirectoryMode":      "0750",                     // jobwatch:jobwatch 0750
		"EnvironmentFile":         "-/etc/default/jobwatch",   // ARGS
		"ExecReload":              "/bin/kill -HUP $MAINPID",  // reload
		"ProcSubset":              "",                         // all: /proc/locks
		"ProtectProc":             "",                         // default: other users' processes
		"PrivateTmp":              "",                         // lock and PID files in /tmp
		"PrivateNetwork":          "",                         // scraped from other hosts
		"PrivateUsers":            "",                         // other users' files and processes
		"IPAddressDeny":           "",                         // scraped from other hosts
		"RestrictAddressFamilies": "AF_INET AF_INET6 AF_UNIX", // scrapes, Redis, MySQL
	} {
		if got := get(k); got != want {
			t.Errorf("%s=%q, want %q", k, got, want)
		}
	}
	if !strings.HasPrefix(get("ExecStart"), "/usr/bin/jobwatch ") || !strings.HasSuffix(get("ExecStart"), " $ARGS") {
		t.Errorf("ExecStart=%q, want /usr/bin/jobwatch ... $ARGS", get("ExecStart"))
	}

	doc, err := os.ReadFile("../docs/install.md")
	if err != nil {
		t.Fatal(err)
	}
	keys := make([]string, 0, len(s))
	for k := range s {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !bytes.Contains(doc, []byte("`"+k+"=")) {
			t.Errorf("docs/install.md does not explain %s= (write it as `%s=...`)", k, k)
		}
	}
}

// commitEpoch is the time of the commit the tree is at, as make release
// dates every file.
func commitEpoch(t *testing.T) int64 {
	t.Helper()
	epoch, err := strconv.ParseInt(strings.TrimSpace(command(t, nil, "git", "log", "-1", "--format=%ct")), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return epoch
}

func sha256File(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// TestReleaseReproducible runs make release for both architectures, then
// again for amd64 in the directory make deb built (deb: its own build of the
// same binary, by the same rule), and compares the two amd64 archives byte
// for byte; then checks the archives. Building amd64 twice proves the build
// reproducible at the cost of one more link, not two.
func TestReleaseReproducible(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the release twice")
	}
	t.Parallel()
	a := t.TempDir()
	command(t, nil, "make", "--no-print-directory", "release", "DIST="+a)
	b := filepath.Dir(deb(t))
	command(t, nil, "make", "--no-print-directory", "-o", filepath.Join(b, "build/linux-amd64/jobwatch"),
		"release", "DIST="+b, "RELEASE_ARCHES=amd64")
	sumsA, err := os.ReadFile(filepath.Join(a, "sha256sums.txt"))
	if err != nil {
		t.Fatal(err)
	}
	sumsB, err := os.ReadFile(filepath.Join(b, "sha256sums.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(sumsA, sumsB) || bytes.Count(sumsB, []byte("\n")) != 1 {
		t.Errorf("the second make release (amd64) is not a line of the first's sums:\n%s\n%s", sumsA, sumsB)
	}
	t.Logf("sha256sums.txt:\n%s", sumsA)

	version := treeVersion(t)
	epoch := commitEpoch(t)
	lines := strings.Split(strings.TrimSpace(string(sumsA)), "\n")
	if len(lines) != 2 {
		t.Fatalf("sha256sums.txt has %d lines, want 2 (amd64, arm64)", len(lines))
	}
	for _, arch := range []string{"amd64", "arm64"} {
		name := fmt.Sprintf("jobwatch-%s.linux-%s.tar.gz", version, arch)
		sum := sha256File(t, filepath.Join(a, name))
		if !bytes.Contains(sumsA, []byte(sum+"  "+name+"\n")) {
			t.Errorf("sha256sums.txt has no line %q", sum+"  "+name)
		}
		if other := filepath.Join(b, name); arch == "amd64" && sha256File(t, other) != sum {
			t.Errorf("%s: %s, then %s\n%s", name, sum, sha256File(t, other), diagnoseArchives(t, filepath.Join(a, name), other, name))
		}
		checkArchive(t, filepath.Join(a, name), strings.TrimSuffix(name, ".tar.gz"), arch, epoch)
	}

	// The amd64 binary says what it is, dated by the commit.
	bin := filepath.Join(t.TempDir(), "jobwatch")
	extract(t, filepath.Join(a, fmt.Sprintf("jobwatch-%s.linux-amd64.tar.gz", version)), fmt.Sprintf("jobwatch-%s.linux-amd64/jobwatch", version), bin)
	out, err := exec.Command(bin, "--version").CombinedOutput()
	if err != nil {
		t.Fatalf("jobwatch --version: %v\n%s", err, out)
	}
	date := time.Unix(epoch, 0).UTC().Format("20060102-15:04:05")
	for _, want := range []string{"jobwatch, version " + version + " ", "build date:       " + date, "build user:       release@reproducible"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("jobwatch --version says\n%s\nwithout %q", out, want)
		}
	}
}

// diagnoseArchives says why two archives of one commit differ: their
// binaries' versions (a build from a work tree changed between the two shows
// as -dirty or another revision) and whether the binaries themselves differ.
func diagnoseArchives(t *testing.T, first, second, name string) string {
	t.Helper()
	member := strings.TrimSuffix(name, ".tar.gz") + "/jobwatch"
	var report strings.Builder
	var sums []string
	for i, archive := range []string{first, second} {
		bin := filepath.Join(t.TempDir(), "jobwatch")
		extract(t, archive, member, bin)
		out, _ := exec.Command(bin, "--version").CombinedOutput()
		sums = append(sums, sha256File(t, bin))
		fmt.Fprintf(&report, "build %d: binary %s\n%s", i+1, sums[i], out)
	}
	if sums[0] == sums[1] {
		report.WriteString("the binaries are the same: the archives' other members or headers differ\n")
	}
	status, _ := exec.Command("git", "status", "--short").CombinedOutput()
	fmt.Fprintf(&report, "git status now:\n%s", status)
	return report.String()
}

// checkArchive checks one release archive: the files it holds, their modes,
// owners and times, and that its binary is static and stripped.
func checkArchive(t *testing.T, path, dir, arch string, epoch int64) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	if !zr.ModTime.IsZero() || zr.Name != "" {
		t.Errorf("%s: gzip header holds a time (%v) or a name (%q): gzip -n", path, zr.ModTime, zr.Name)
	}
	want := map[string]int64{
		dir + "/":                          0o755,
		dir + "/jobwatch":                  0o755,
		dir + "/jobwatch-run":              0o755,
		dir + "/LICENSE":                   0o644,
		dir + "/README.md":                 0o644,
		dir + "/CHANGELOG.md":              0o644,
		dir + "/jobwatch.yml":              0o644,
		dir + "/alerts/":                   0o755,
		dir + "/alerts/jobwatch.rules.yml": 0o644,
		dir + "/dashboards/":               0o755,
		dir + "/dashboards/jobwatch.json":  0o644,
	}
	tr := tar.NewReader(zr)
	var names []string
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
		mode, ok := want[h.Name]
		if !ok {
			t.Errorf("%s: unexpected %s", path, h.Name)
			continue
		}
		delete(want, h.Name)
		if h.Mode != mode || h.Uid != 0 || h.Gid != 0 || h.Uname != "" || h.Gname != "" || h.ModTime.Unix() != epoch {
			t.Errorf("%s: %s: mode %o uid %d gid %d (%q:%q) time %d, want mode %o, 0:0 numeric, time %d",
				path, h.Name, h.Mode, h.Uid, h.Gid, h.Uname, h.Gname, h.ModTime.Unix(), mode, epoch)
		}
		if h.Name == dir+"/jobwatch" || h.Name == dir+"/jobwatch-run" {
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			checkBinary(t, h.Name, b, arch)
		}
	}
	for n := range want {
		t.Errorf("%s: no %s", path, n)
	}
	if !sort.StringsAreSorted(names) {
		t.Errorf("%s: entries not sorted by name: %v", path, names)
	}
}

// checkBinary: an ELF executable for arch with no interpreter (static) and
// no symbol table (stripped).
func checkBinary(t *testing.T, name string, b []byte, arch string) {
	t.Helper()
	e, err := elf.NewFile(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	machine := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}[arch]
	if e.Machine != machine {
		t.Errorf("%s: machine %v, want %v", name, e.Machine, machine)
	}
	for _, p := range e.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			t.Errorf("%s: has %v: not static", name, p.Type)
		}
	}
	for _, s := range []string{".symtab", ".debug_info"} {
		if e.Section(s) != nil {
			t.Errorf("%s: has %s: not stripped", name, s)
		}
	}
}

func extract(t *testing.T, archive, member, to string) {
	t.Helper()
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err != nil {
			t.Fatalf("%s: no %s: %v", archive, member, err)
		}
		if h.Name != member {
			continue
		}
		out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(out, tr); err != nil {
			t.Fatal(err)
		}
		if err := out.Close(); err != nil {
			t.Fatal(err)
		}
		return
	}
}

var (
	debOnce sync.Once
	debPath string
	debErr  error
)

// deb builds the package once per test run (make deb) and returns its path.
func deb(t *testing.T) string {
	t.Helper()
	debOnce.Do(func() {
		dist := filepath.Join(shared, "dist")
		cmd := exec.Command("make", "--no-print-directory", "deb", "DIST="+dist)
		cmd.Dir = ".."
		out, err := cmd.CombinedOutput()
		if err != nil {
			debErr = fmt.Errorf("make deb: %v\n%s", err, out)
			return
		}
		debs, _ := filepath.Glob(filepath.Join(dist, "jobwatch_*_amd64.deb"))
		if len(debs) != 1 {
			debErr = fmt.Errorf("make deb made %v, want one jobwatch_*_amd64.deb", debs)
			return
		}
		debPath = debs[0]
	})
	if debErr != nil {
		t.Fatal(debErr)
	}
	return debPath
}

var (
	upgradeOnce sync.Once
	upgradePath string
)

// upgradeDeb is the package to upgrade deb's to, made once per test run:
// the same binary packaged again under a newer version (VERSION+upgrade1);
// what an upgrade does to the files, user and state does not depend on the
// binary's bytes.
func upgradeDeb(t *testing.T) string {
	t.Helper()
	version := strings.TrimSpace(command(t, nil, "dpkg-deb", "-f", deb(t), "Version"))
	upgradeOnce.Do(func() {
		newDist := filepath.Join(shared, "upgrade")
		makeFromDebBinary(t, newDist, "deb", "PKG_VERSION="+version+"+upgrade1")
		upgradePath = filepath.Join(newDist, "jobwatch_"+version+"+upgrade1_amd64.deb")
	})
	if _, err := os.Stat(upgradePath); err != nil {
		t.Fatalf("the upgrade's package: %v", err)
	}
	return upgradePath
}

// makeFromDebBinary runs make target in dist with make deb's amd64 binaries
// copied in and taken as up to date (make -o), so that a second package is
// made without linking jobwatch again.
func makeFromDebBinary(t *testing.T, dist, target string, vars ...string) {
	t.Helper()
	args := []string{"--no-print-directory"}
	for _, name := range []string{"jobwatch", "jobwatch-run"} {
		bin := filepath.Join(dist, "build/linux-amd64", name)
		b, err := os.ReadFile(filepath.Join(filepath.Dir(deb(t)), "build/linux-amd64", name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(bin, b, 0o755); err != nil {
			t.Fatal(err)
		}
		args = append(args, "-o", bin)
	}
	args = append(append(args, target, "DIST="+dist), vars...)
	command(t, nil, "make", args...)
}

// TestDeb checks the package's control fields and files, and that lintian
// finds no error in it.
func TestDeb(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the package")
	}
	t.Parallel()
	need(t, "dpkg-deb", "dpkg")
	need(t, "lintian", "lintian")
	pkg := deb(t)
	version := treeVersion(t)
	if want := "jobwatch_" + version + "_amd64.deb"; filepath.Base(pkg) != want {
		t.Errorf("make deb made %s, want %s", filepath.Base(pkg), want)
	}
	// The binary says the package's version, as dpkg spells it.
	out, err := exec.Command(filepath.Join(filepath.Dir(pkg), "build/linux-amd64/jobwatch"), "--version").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "jobwatch, version "+version+" ") {
		t.Errorf("the packaged jobwatch --version (%v):\n%s\nwant version %s", err, out, version)
	}
	for field, want := range map[string]string{
		"Package":      "jobwatch",
		"Version":      version,
		"Architecture": "amd64",
		"Depends":      "adduser | passwd",
		"Recommends":   "logrotate",
	} {
		if got := strings.TrimSpace(command(t, nil, "dpkg-deb", "-f", pkg, field)); got != want {
			t.Errorf("%s: %q, want %q", field, got, want)
		}
	}
	listing := command(t, nil, "dpkg-deb", "-c", pkg)
	for _, f := range []string{
		"-rwxr-xr-x root/root .* ./usr/bin/jobwatch",
		"-rwxr-xr-x root/root .* ./usr/bin/jobwatch-run",
		"-rw-r--r-- root/root .* ./lib/systemd/system/jobwatch.service",
		"-rw-r--r-- root/root .* ./etc/jobwatch/jobwatch.yml",
		"-rw-r--r-- root/root .* ./etc/default/jobwatch",
		"-rw-r--r-- root/root .* ./etc/logrotate.d/jobwatch",
		"-rw-r--r-- root/root .* ./usr/share/doc/jobwatch/copyright",
		"-rw-r--r-- root/root .* ./usr/share/doc/jobwatch/changelog.gz",
		"-rw-r--r-- root/root .* ./usr/share/man/man1/jobwatch.1.gz",
		`l[-rwx]{9} root/root .* ./usr/share/man/man1/jobwatch-run.1.gz -> jobwatch.1.gz`,
	} {
		if !regexp.MustCompile(`(?m)^` + f + `$`).MatchString(listing) {
			t.Errorf("the package has no line matching %q:\n%s", f, listing)
		}
	}
	ctrl := t.TempDir()
	command(t, nil, "dpkg-deb", "-e", pkg, ctrl)
	conffiles, err := os.ReadFile(filepath.Join(ctrl, "conffiles"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Fields(string(conffiles)), []string{"/etc/default/jobwatch", "/etc/jobwatch/jobwatch.yml", "/etc/logrotate.d/jobwatch"}; strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("conffiles %v, want %v", got, want)
	}
	// The packaged config is valid.
	command(t, nil, "go", "run", "./cmd/jobwatch", "check-config", "--config.file=packaging/jobwatch.yml")

	cmd := exec.Command("lintian", "--display-info", "--pedantic", pkg)
	out, err = cmd.CombinedOutput()
	t.Logf("lintian:\n%s", out)
	// docs/install.md says: no error, no warning (the overrides it justifies aside).
	if regexp.MustCompile(`(?m)^[EW]: `).Match(out) {
		t.Errorf("lintian reports errors or warnings")
	}
	if err != nil && !regexp.MustCompile(`(?m)^[EWIPX]: `).Match(out) {
		t.Errorf("lintian: %v", err)
	}
}

// TestRPM builds the RPM from make deb's binary and lists it with rpm.
func TestRPM(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the package")
	}
	t.Parallel()
	need(t, "rpm", "rpm")
	dist := t.TempDir()
	makeFromDebBinary(t, dist, "rpm")
	rpms, _ := filepath.Glob(filepath.Join(dist, "jobwatch-*.x86_64.rpm"))
	if len(rpms) != 1 {
		t.Fatalf("make rpm made %v, want one jobwatch-*.x86_64.rpm", rpms)
	}
	got := strings.Fields(command(t, nil, "rpm", "-qpl", rpms[0]))
	for _, f := range []string{"/usr/bin/jobwatch", "/usr/bin/jobwatch-run", "/lib/systemd/system/jobwatch.service", "/etc/jobwatch/jobwatch.yml", "/etc/default/jobwatch", "/etc/logrotate.d/jobwatch", "/usr/share/doc/jobwatch/copyright"} {
		if !strings.Contains(" "+strings.Join(got, " ")+" ", " "+f+" ") {
			t.Errorf("rpm -qpl: no %s in %v", f, got)
		}
	}
	configs := strings.Fields(command(t, nil, "rpm", "-qpc", rpms[0]))
	if strings.Join(configs, " ") != "/etc/default/jobwatch /etc/jobwatch/jobwatch.yml /etc/logrotate.d/jobwatch" {
		t.Errorf("rpm -qpc: %v", configs)
	}
}

// freePort returns a loopback port nothing listens on now.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// hostState is what an install on the machine itself would change.
func hostState(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	for _, p := range []string{"/var/lib/dpkg/status", "/etc/passwd", "/etc/group", "/etc/shadow"} {
		fmt.Fprintf(&b, "%s %s\n", p, sha256File(t, p))
	}
	for _, p := range []string{"/usr/bin/jobwatch", "/lib/systemd/system/jobwatch.service", "/etc/jobwatch", "/etc/default/jobwatch", "/var/lib/jobwatch", "/var/log/jobwatch"} {
		_, err := os.Lstat(p)
		fmt.Fprintf(&b, "%s exists: %v\n", p, err == nil)
	}
	return b.String()
}

// TestInstall installs the package, runs jobwatch as the unit does,
// upgrades, removes and purges it, all in a mount namespace whose /etc,
// /usr and /var are overlays on a tmpfs (testdata/install.sh): the machine
// ends as it began, which the test checks.
func TestInstall(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and installs the package")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root: mount namespaces, overlays and dpkg")
	}
	t.Parallel()
	for cmd, pkg := range map[string]string{"unshare": "util-linux", "setpriv": "util-linux", "dpkg": "dpkg", "curl": "curl", "systemd-analyze": "systemd"} {
		need(t, cmd, pkg)
	}
	old, upgrade := deb(t), upgradeDeb(t)

	before := hostState(t)
	scratch := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	script, err := filepath.Abs("testdata/install.sh")
	if err != nil {
		t.Fatal(err)
	}
	// --pid --fork --kill-child: every process the script starts is in a PID
	// namespace that ends, with all of them, when the script or unshare does.
	cmd := exec.CommandContext(ctx, "unshare", "-m", "--propagation", "private",
		"--pid", "--fork", "--kill-child", "--mount-proc",
		"sh", "-c", `exec sh "$0" "$@"`, script, scratch, old, upgrade, strconv.Itoa(freePort(t)))
	cmd.WaitDelay = 10 * time.Second
	out, err := cmd.CombinedOutput()
	t.Logf("install.sh:\n%s", out)
	if err != nil {
		t.Errorf("install.sh: %v", err)
	}
	if after := hostState(t); after != before {
		t.Errorf("the machine changed:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}
