package distribution

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"text/template"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/ns-doctor/ns-doctor/test/support/plugintest"
)

// placeholderSHA256 is the sha256 of an empty file: plugins/ns-doctor.yaml
// carries it until a release exists, and a rendered manifest for the
// platforms a snapshot did not build.
const placeholderSHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

// platform is one GOOS/GOARCH of the release.
type platform struct{ OS, Arch string }

func (p platform) String() string { return p.OS + "/" + p.Arch }

// goreleaserConfig is .goreleaser.yaml, as plain YAML.
func goreleaserConfig(t *testing.T) map[string]any {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot, ".goreleaser.yaml"))
	plugintest.Must(t, err)
	var cfg map[string]any
	plugintest.Must(t, yaml.Unmarshal(data, &cfg))
	return cfg
}

// theBuild is the config's one build (of the plugin's binary).
func theBuild(t *testing.T, cfg map[string]any) map[string]any {
	t.Helper()
	builds, _ := cfg["builds"].([]any)
	if len(builds) != 1 {
		t.Fatalf(".goreleaser.yaml has %d builds; this test knows one (the plugin's binary): extend it", len(builds))
	}
	return builds[0].(map[string]any)
}

// theArchive is the config's one archive entry.
func theArchive(t *testing.T, cfg map[string]any) map[string]any {
	t.Helper()
	archives, _ := cfg["archives"].([]any)
	if len(archives) != 1 {
		t.Fatalf(".goreleaser.yaml has %d archives; this test knows one: extend it", len(archives))
	}
	return archives[0].(map[string]any)
}

// releaseMatrix is every platform the release builds: the build's goos
// times its goarch, in the config's order, but for the pairs Go does not
// build (darwin/386), which goreleaser skips too.
func releaseMatrix(t *testing.T, cfg map[string]any) []platform {
	t.Helper()
	build := theBuild(t, cfg)
	for _, key := range []string{"targets", "ignore", "goarm", "goamd64", "goarm64", "go386"} {
		if _, ok := build[key]; ok {
			t.Fatalf(".goreleaser.yaml's build sets %s, which this test does not read: extend releaseMatrix", key)
		}
	}
	r := command(t, time.Minute, nil, "go", "tool", "dist", "list")
	if r.Code != 0 {
		t.Fatalf("go tool dist list: exit %d\n%s", r.Code, r.Stderr)
	}
	supported := strings.Fields(r.Stdout)
	var out []platform
	for _, goos := range stringList(t, build, "goos") {
		for _, arch := range stringList(t, build, "goarch") {
			if p := (platform{goos, arch}); slices.Contains(supported, p.String()) {
				out = append(out, p)
			}
		}
	}
	if len(out) < 2 {
		t.Fatalf(".goreleaser.yaml builds %v: a release of one platform leaves krew nothing to choose", out)
	}
	return out
}

// stringList is the list of strings under key.
func stringList(t *testing.T, m map[string]any, key string) []string {
	t.Helper()
	list, _ := m[key].([]any)
	out := make([]string, 0, len(list))
	for _, v := range list {
		s, ok := v.(string)
		if !ok {
			t.Fatalf(".goreleaser.yaml: %s holds %v, not a string", key, v)
		}
		out = append(out, s)
	}
	return out
}

// archiveName is the file goreleaser makes for p at version: the
// archive's name_template (a Go template over .ProjectName, .Version, .Os
// and .Arch), then its format, or the format_overrides entry of p's OS.
func archiveName(t *testing.T, cfg map[string]any, p platform, version string) string {
	t.Helper()
	archive := theArchive(t, cfg)
	tmpl, err := template.New("name_template").Option("missingkey=error").Parse(fmt.Sprint(archive["name_template"]))
	if err != nil {
		t.Fatalf(".goreleaser.yaml's name_template: %v", err)
	}
	var name bytes.Buffer
	if err := tmpl.Execute(&name, map[string]string{"ProjectName": fmt.Sprint(cfg["project_name"]), "Version": version, "Os": p.OS, "Arch": p.Arch}); err != nil {
		t.Fatalf(".goreleaser.yaml's name_template uses more than .ProjectName, .Version, .Os and .Arch: %v", err)
	}
	formats := stringList(t, archive, "formats")
	overrides, _ := archive["format_overrides"].([]any)
	for _, o := range overrides {
		if o := o.(map[string]any); o["goos"] == p.OS {
			formats = stringList(t, o, "formats")
		}
	}
	if len(formats) != 1 {
		t.Fatalf(".goreleaser.yaml gives %s the archive formats %v; krew takes one", p, formats)
	}
	return name.String() + "." + formats[0]
}

// binaryName is the plugin's file in the archive for goos.
func binaryName(t *testing.T, cfg map[string]any, goos string) string {
	t.Helper()
	bin := fmt.Sprint(theBuild(t, cfg)["binary"])
	if goos == "windows" {
		bin += ".exe"
	}
	return bin
}

// releaseURL is where GitHub serves a release asset of the config's
// repository.
func releaseURL(t *testing.T, cfg map[string]any, tag, asset string) string {
	t.Helper()
	release, _ := cfg["release"].(map[string]any)
	github, _ := release["github"].(map[string]any)
	if github["owner"] == nil || github["name"] == nil {
		t.Fatalf(".goreleaser.yaml names no release.github owner and name")
	}
	return fmt.Sprintf("https://github.com/%s/%s/releases/download/%s/%s", github["owner"], github["name"], tag, asset)
}

// Every platform .goreleaser.yaml releases has one platform in
// plugins/ns-doctor.yaml (the template's rendering:
// TestCommittedManifestMatchesTemplate), selected by its os and arch,
// whose uri names the archive the config makes for it and whose bin is
// the binary in it; and the manifest has no other. It reads configs only:
// TestSnapshotInstallsLikeKrew checks these archive names against
// goreleaser's own for the platforms it builds, make release-check for
// every one.
func TestReleaseMatrixMatchesKrewManifest(t *testing.T) {
	cfg := goreleaserConfig(t)
	data, err := os.ReadFile(filepath.Join(repoRoot, "plugins", "ns-doctor.yaml"))
	plugintest.Must(t, err)
	committed := readManifest(t, data)
	tag := fmt.Sprint(committed["spec"].(map[string]any)["version"])
	matrix := releaseMatrix(t, cfg)
	seen := map[platform]bool{}
	for _, raw := range platforms(committed) {
		entry := raw.(map[string]any)
		selector, _ := entry["selector"].(map[string]any)
		labels, _ := selector["matchLabels"].(map[string]any)
		p := platform{fmt.Sprint(labels["os"]), fmt.Sprint(labels["arch"])}
		switch {
		case seen[p]:
			t.Errorf("plugins/ns-doctor.yaml has %s twice", p)
		case !slices.Contains(matrix, p):
			t.Errorf("plugins/ns-doctor.yaml offers %s, which .goreleaser.yaml does not build (%v)", p, matrix)
		}
		seen[p] = true
		if want := releaseURL(t, cfg, tag, archiveName(t, cfg, p, releaseVersion(tag))); entry["uri"] != want {
			t.Errorf("%s: uri %v, want the archive .goreleaser.yaml makes, %s", p, entry["uri"], want)
		}
		if want := binaryName(t, cfg, p.OS); entry["bin"] != want {
			t.Errorf("%s: bin %v, want %s", p, entry["bin"], want)
		}
	}
	for _, p := range matrix {
		if !seen[p] {
			t.Errorf(".goreleaser.yaml releases %s, for which plugins/ns-doctor.yaml (and krew/.krew.yaml) has no platform", p)
		}
	}
}
