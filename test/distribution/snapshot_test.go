package distribution

import (
	"archive/tar"
	"archive/zip"
	"bufio"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/ns-doctor/ns-doctor/test/support/plugintest"
)

// TestSnapshotInstallsLikeKrew builds release archives with the pinned
// goreleaser from .goreleaser.yaml, for this machine's platform and one
// other (snapshotPlatforms: every platform with NSDOCTOR_RELEASE_MATRIX=all,
// as make release-check runs it), renders krew/.krew.yaml for them as
// krew-release-bot would, serves them over HTTP as a release would, and has
// krew-index's own validator install each platform built through the real
// krew. Then the real krew installs each archive (KREW_OS/KREW_ARCH for the
// other platform) with --manifest and --archive, choosing it among all the
// manifest's platforms, and the one for this machine runs through the real
// kubectl, with the shipped completion shim.
func TestSnapshotInstallsLikeKrew(t *testing.T) {
	if testing.Short() {
		t.Skip("builds goreleaser and release archives (minutes)")
	}
	krew := installKrew(t)
	gr := installGoreleaser(t)
	if r := command(t, 5*time.Minute, nil, gr, "check"); r.Code != 0 {
		t.Fatalf("goreleaser check: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	cfg := goreleaserConfig(t)
	matrix := releaseMatrix(t, cfg)
	built := snapshotPlatforms(t, matrix)
	dist := snapshot(t, gr, cfg, built, len(built) < len(matrix))

	var meta struct{ Version, Commit string }
	readJSON(t, filepath.Join(dist, "metadata.json"), &meta)
	if len(meta.Commit) != 40 {
		t.Errorf("goreleaser stamps commit %q, not a git commit", meta.Commit)
	}
	sums := checksums(t, dist)
	archives := archiveArtifacts(t, dist)
	slices.SortFunc(archives, func(a, b archiveArtifact) int { return strings.Compare(a.Name, b.Name) })
	// goreleaser makes, for the platforms built, the very archive names
	// TestReleaseMatrixMatchesKrewManifest expects for every platform.
	names := map[string]platform{} // archive name -> platform, every one the config makes
	for _, p := range matrix {
		names[archiveName(t, cfg, p, meta.Version)] = p
	}
	got, want := map[string]platform{}, map[string]platform{}
	for _, a := range archives {
		got[a.Name] = platform{a.Goos, a.Goarch}
	}
	for name, p := range names {
		if slices.Contains(built, p) {
			want[name] = p
		}
	}
	if !maps.Equal(got, want) {
		t.Fatalf("goreleaser made the archives %v, want %v (the platforms %v)", got, want, built)
	}

	// The bot renders from the release tag; each URL must name an archive
	// the config makes, and for those built here one whose checksum the
	// manifest then carries. They are served over HTTP, as GitHub serves a
	// release's assets; the others keep their release URL and the
	// placeholder sha256 of plugins/ns-doctor.yaml.
	release := httptest.NewServer(http.FileServer(http.Dir(dist)))
	t.Cleanup(release.Close)
	tag := "v" + meta.Version
	urls := map[string]string{} // archive name -> release URL
	rendered := renderTemplate(t, tag, func(url string) (string, string, error) {
		name := url[strings.LastIndex(url, "/")+1:]
		if _, ok := names[name]; !ok {
			return "", "", fmt.Errorf("the template's URL %s names no archive .goreleaser.yaml makes (%v)", url, slices.Sorted(maps.Keys(names)))
		}
		urls[name] = url
		if _, ok := want[name]; !ok {
			return url, placeholderSHA256, nil
		}
		sha, ok := sums[name]
		if !ok {
			return "", "", fmt.Errorf("checksums.txt has no line for %s (it has %v)", name, slices.Sorted(maps.Keys(sums)))
		}
		return release.URL + "/" + name, sha, nil
	})
	manifestFile := filepath.Join(t.TempDir(), "ns-doctor.yaml")
	plugintest.Must(t, os.WriteFile(manifestFile, rendered, 0o644))
	m := readManifest(t, rendered)
	installable := manifestFile
	if len(built) < len(matrix) {
		// The validator installs every platform of a manifest: here, one
		// with the platforms built; the whole one is validated without.
		if r := krew.validateManifest(t, manifestFile, false); r.Code != 0 {
			t.Fatalf("validate-krew-manifest -skip-install: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
		installable = writeManifest(t, withPlatforms(m, func(p map[string]any) bool { return strings.HasPrefix(fmt.Sprint(p["uri"]), release.URL+"/") }))
	}
	if r := krew.validateManifest(t, installable, true); r.Code != 0 {
		t.Fatalf("validate-krew-manifest, installing every platform built: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	if got := m["spec"].(map[string]any)["version"]; got != tag {
		t.Errorf("spec.version %v, want %s", got, tag)
	}
	// The committed manifest is the same but for version, uri and sha256.
	data, err := os.ReadFile(filepath.Join(repoRoot, "plugins", "ns-doctor.yaml"))
	plugintest.Must(t, err)
	if got, want := structure(readManifest(t, data)), structure(m); !reflect.DeepEqual(got, want) {
		t.Errorf("plugins/ns-doctor.yaml differs from the snapshot's manifest beyond version, uri and sha256:\n%+v\n%+v", got, want)
	}

	for _, a := range archives {
		t.Run(a.Goos+"-"+a.Goarch, func(t *testing.T) {
			if want := releaseURL(t, cfg, tag, a.Name); urls[a.Name] != want {
				t.Errorf("release URL %q, want %q", urls[a.Name], want)
			}
			root := t.TempDir()
			dir := krew.install(t, root, manifestFile, filepath.Join(dist, a.Name), a.Goos, a.Goarch, tag)
			bin := binaryName(t, cfg, a.Goos)
			for _, f := range []string{"LICENSE", bin} {
				if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
					t.Errorf("krew did not install %s from the archive: %v", f, err)
				}
			}
			// krew installs the binary and LICENSE only (krew#812); the
			// shim ships in the archive for those who install by hand.
			shim, mode, err := archivedFile(filepath.Join(dist, a.Name), "kubectl_complete-ns_doctor")
			if err != nil || mode&0o111 == 0 {
				t.Errorf("the archive's completion shim: %v, mode %v", err, mode)
			}
			if a.Goos == runtime.GOOS && a.Goarch == runtime.GOARCH {
				runInstalled(t, root, shim, meta.Version, meta.Commit)
			}
		})
	}
}

// snapshotPlatforms are the platforms the snapshot builds. All six take
// minutes each cold (11 in all on an idle 2-core machine), so make test
// builds two: this machine's, which runs, and one krew must choose by
// KREW_OS/KREW_ARCH among the manifest's platforms, windows (a zip and a
// .exe: the archive least like this one). NSDOCTOR_RELEASE_MATRIX=all, as
// make release-check sets it, builds every platform of the release.
func snapshotPlatforms(t *testing.T, matrix []platform) []platform {
	t.Helper()
	switch v := os.Getenv("NSDOCTOR_RELEASE_MATRIX"); v {
	case "all":
		return matrix
	case "":
	default:
		t.Fatalf("NSDOCTOR_RELEASE_MATRIX=%q: only \"all\" (every platform of .goreleaser.yaml) or unset (this machine's and one other)", v)
	}
	host := platform{runtime.GOOS, runtime.GOARCH}
	other := platform{"windows", runtime.GOARCH}
	if host.OS == "windows" {
		other.OS = "linux"
	}
	for _, p := range []platform{host, other} {
		if !slices.Contains(matrix, p) {
			t.Fatalf("%s is not among the platforms of .goreleaser.yaml (%v): run with NSDOCTOR_RELEASE_MATRIX=all", p, matrix)
		}
	}
	return []platform{host, other}
}

// withPlatforms is m with only the platforms keep keeps.
func withPlatforms(m map[string]any, keep func(map[string]any) bool) map[string]any {
	out := deepCopy(m)
	spec := out["spec"].(map[string]any)
	var kept []any
	for _, p := range platforms(out) {
		if keep(p.(map[string]any)) {
			kept = append(kept, p)
		}
	}
	spec["platforms"] = kept
	return out
}

// writeManifest writes m where krew-index's validator wants it: a file
// named after the plugin.
func writeManifest(t *testing.T, m map[string]any) string {
	t.Helper()
	data, err := yaml.Marshal(m)
	plugintest.Must(t, err)
	file := filepath.Join(t.TempDir(), "ns-doctor.yaml")
	plugintest.Must(t, os.WriteFile(file, data, 0o644))
	return file
}

// archivedFile reads one file at the top of a release archive, and its
// mode.
func archivedFile(archive, name string) ([]byte, os.FileMode, error) {
	if strings.HasSuffix(archive, ".zip") {
		r, err := zip.OpenReader(archive)
		if err != nil {
			return nil, 0, err
		}
		defer func() { _ = r.Close() }()
		f, err := r.Open(name)
		if err != nil {
			return nil, 0, err
		}
		defer func() { _ = f.Close() }()
		info, err := f.Stat()
		if err != nil {
			return nil, 0, err
		}
		data, err := io.ReadAll(f)
		return data, info.Mode(), err
	}
	f, err := os.Open(archive)
	if err != nil {
		return nil, 0, err
	}
	defer func() { _ = f.Close() }()
	gz, err := gzip.NewReader(f)
	if err != nil {
		return nil, 0, err
	}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err != nil {
			return nil, 0, fmt.Errorf("%s in %s: %w", name, archive, err)
		}
		if h.Name == name {
			data, err := io.ReadAll(tr)
			return data, h.FileInfo().Mode(), err
		}
	}
}

// runInstalled runs the krew-installed plugin through kubectl, with only
// krew's bin folder added to PATH, then the shipped shim (which must be
// what `completion kubectl-plugin` prints) installed as install.md tells
// krew users to.
func runInstalled(t *testing.T, root string, shim []byte, wantVersion, wantCommit string) {
	t.Helper()
	bin := filepath.Join(root, "bin")
	env := []string{"PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH"), "KUBECONFIG=" + cp.Kubeconfig}
	r := command(t, time.Minute, env, "kubectl", "ns-doctor", "version", "-o", "json")
	var info struct{ Version, Commit string }
	if err := json.Unmarshal([]byte(r.Stdout), &info); r.Code != 0 || err != nil {
		t.Fatalf("kubectl ns-doctor version -o json: exit %d, %v\n%s%s", r.Code, err, r.Stdout, r.Stderr)
	}
	if info.Version != wantVersion || info.Commit != wantCommit {
		t.Errorf("installed plugin reports %s (%s), want %s (%s)", info.Version, info.Commit, wantVersion, wantCommit)
	}
	t.Logf("kubectl ns-doctor version, krew-installed: %s (commit %s)", info.Version, info.Commit)
	if r := command(t, time.Minute, env, "kubectl", "plugin", "list"); !strings.Contains(r.Stdout, filepath.Join(bin, "kubectl-ns_doctor")) {
		t.Errorf("kubectl plugin list does not show krew's link:\n%s%s", r.Stdout, r.Stderr)
	}

	printed := command(t, time.Minute, env, "kubectl", "ns-doctor", "completion", "kubectl-plugin")
	if printed.Code != 0 || printed.Stdout != string(shim) {
		t.Errorf("the archive's shim differs from what 'kubectl ns-doctor completion kubectl-plugin' prints (exit %d)", printed.Code)
	}
	plugintest.Must(t, os.WriteFile(filepath.Join(bin, "kubectl_complete-ns_doctor"), []byte(printed.Stdout), 0o755))
	names, _ := completions(t, command(t, time.Minute, env, "kubectl", "__complete", "ns-doctor", "explain", "kube-"))
	if !slices.Contains(names, "kube-system") {
		t.Errorf("the shipped shim, beside the krew-installed plugin, completes %v", names)
	}
}

// installGoreleaser runs the project's pinned installer (cached in
// .cache/tools; a cold install builds goreleaser, about 10 minutes).
func installGoreleaser(t *testing.T) string {
	t.Helper()
	start := time.Now()
	r := command(t, 30*time.Minute, nil, "bash", filepath.Join(repoRoot, "hack", "install-goreleaser.sh"))
	if r.Code != 0 {
		t.Fatalf("hack/install-goreleaser.sh: exit %d\n%s", r.Code, r.Stderr)
	}
	t.Logf("goreleaser install: %s", time.Since(start).Round(time.Second))
	return strings.TrimSpace(r.Stdout)
}

// snapshot runs `goreleaser release --snapshot` on a copy of the sources
// (see sourceCopy), with a config that writes into a temporary dist (the
// checkout's dist/ is not touched), versions the snapshot like a release
// and, when narrow, builds the platforms given only (see releaseConfig).
func snapshot(t *testing.T, gr string, cfg map[string]any, platforms []platform, narrow bool) string {
	t.Helper()
	dir := t.TempDir()
	dist := filepath.Join(dir, "dist")
	config := filepath.Join(dir, "goreleaser.yaml")
	if !narrow {
		platforms = nil
	}
	plugintest.Must(t, os.WriteFile(config, releaseConfig(t, cfg, dist, platforms), 0o644))
	src := sourceCopy(t)
	start := time.Now()
	// The watch's image needs docker buildx and a registry: the release
	// builds it; here `goreleaser check` (above) validates its config.
	r := plugintest.Command(t, src, 35*time.Minute, nil, gr, "release", "--snapshot", "--clean", "--skip=docker", "--config", config)
	if r.Code != 0 {
		t.Fatalf("goreleaser release --snapshot: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	what := "every platform"
	if narrow {
		what = fmt.Sprint(platforms)
	}
	t.Logf("goreleaser snapshot build of %s: %s", what, time.Since(start).Round(time.Second))
	return dist
}

// sourceCopy copies the checkout's files (tracked, and untracked but not
// ignored: the working tree as it is) into a new git repository with one
// commit. goreleaser builds for minutes, one target after another; an
// edit in the checkout meanwhile would mix two versions of the sources.
func sourceCopy(t *testing.T) string {
	t.Helper()
	r := command(t, time.Minute, nil, "git", "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	if r.Code != 0 {
		t.Fatalf("git ls-files: %s", r.Stderr)
	}
	dst := t.TempDir()
	for _, name := range strings.Split(strings.TrimRight(r.Stdout, "\x00"), "\x00") {
		data, err := os.ReadFile(filepath.Join(repoRoot, name))
		if os.IsNotExist(err) {
			continue // deleted, not yet committed
		}
		plugintest.Must(t, err)
		info, err := os.Stat(filepath.Join(repoRoot, name))
		plugintest.Must(t, err)
		plugintest.Must(t, os.MkdirAll(filepath.Dir(filepath.Join(dst, name)), 0o755))
		plugintest.Must(t, os.WriteFile(filepath.Join(dst, name), data, info.Mode().Perm()))
	}
	for _, args := range [][]string{
		{"init", "-q"},
		{"add", "-A"},
		{"-c", "user.name=ns-doctor test", "-c", "user.email=test@ns-doctor.invalid", "commit", "-q", "--no-verify", "-m", "snapshot"},
		// Without a remote goreleaser gives up on the git state and
		// stamps commit "none"; it only reads the URL.
		{"remote", "add", "origin", "https://github.com/ns-doctor/ns-doctor.git"},
	} {
		if r := plugintest.Command(t, dst, time.Minute, nil, "git", args...); r.Code != 0 {
			t.Fatalf("git %s in the source copy: %s", strings.Join(args, " "), r.Stderr)
		}
	}
	return dst
}

// releaseConfig is .goreleaser.yaml (cfg) with dist moved and the
// snapshot version made release-shaped (0.0.1, not 0.0.1-next):
// krew-release-bot skips pre-releases and takes .Version as the tag's
// dotted number, so only such a version renders the template the way a
// release does. Given platforms, the build makes those only (goreleaser's
// builds[].targets in place of goos and goarch): the release's config
// stays the one source of everything else.
func releaseConfig(t *testing.T, cfg map[string]any, dist string, only []platform) []byte {
	t.Helper()
	cfg = deepCopy(cfg)
	cfg["dist"] = dist
	snap, _ := cfg["snapshot"].(map[string]any)
	if snap == nil {
		snap = map[string]any{}
	}
	snap["version_template"] = "{{ incpatch .Version }}"
	cfg["snapshot"] = snap
	if len(only) > 0 {
		build := theBuild(t, cfg)
		delete(build, "goos")
		delete(build, "goarch")
		targets := make([]any, 0, len(only))
		for _, p := range only {
			targets = append(targets, p.OS+"_"+p.Arch)
		}
		build["targets"] = targets
	}
	out, err := yaml.Marshal(cfg)
	plugintest.Must(t, err)
	return out
}

type archiveArtifact struct {
	Name, Path, Goos, Goarch, Type string
}

func archiveArtifacts(t *testing.T, dist string) []archiveArtifact {
	t.Helper()
	var all []archiveArtifact
	readJSON(t, filepath.Join(dist, "artifacts.json"), &all)
	var out []archiveArtifact
	for _, a := range all {
		if a.Type == "Archive" {
			out = append(out, a)
		}
	}
	return out
}

// checksums reads goreleaser's checksums.txt: "<sha256>  <file>" lines.
func checksums(t *testing.T, dist string) map[string]string {
	t.Helper()
	f, err := os.Open(filepath.Join(dist, "checksums.txt"))
	plugintest.Must(t, err)
	defer func() { _ = f.Close() }()
	sums := map[string]string{}
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) != 2 {
			t.Fatalf("checksums.txt: bad line %q", s.Text())
		}
		sums[fields[1]] = fields[0]
	}
	plugintest.Must(t, s.Err())
	return sums
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	data, err := os.ReadFile(path)
	plugintest.Must(t, err)
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}
