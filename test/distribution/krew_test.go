package distribution

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"text/template"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/ns-doctor/ns-doctor/test/support/plugintest"
)

// krewTools are the real krew and krew-index's validator, at the pins of
// hack/install-krew.sh, and a folder for PATH where kubectl finds krew as
// its plugin (kubectl-krew).
type krewTools struct {
	validate string
	bin      string
}

func installKrew(t *testing.T) krewTools {
	t.Helper()
	start := time.Now()
	r := command(t, 10*time.Minute, nil, "bash", filepath.Join(repoRoot, "hack", "install-krew.sh"))
	paths := strings.Fields(r.Stdout)
	if r.Code != 0 || len(paths) != 2 {
		t.Fatalf("hack/install-krew.sh: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	t.Logf("krew install: %s", time.Since(start).Round(time.Second))
	bin := t.TempDir()
	plugintest.Must(t, os.Symlink(paths[0], filepath.Join(bin, "kubectl-krew")))
	return krewTools{validate: paths[1], bin: bin}
}

// env is the environment of a krew command: krew on kubectl's PATH, its
// root, and no check for a newer krew (no network here).
func (k krewTools) env(root string, extra ...string) []string {
	return append([]string{"PATH=" + k.bin + string(os.PathListSeparator) + os.Getenv("PATH"),
		"KREW_ROOT=" + root, "KREW_NO_UPGRADE_CHECK=1"}, extra...)
}

// validateManifest runs krew-index's validator on file (named as in
// krew-index, <plugin>.yaml); install also installs every platform through
// `kubectl krew install`, as krew-index's CI does.
func (k krewTools) validateManifest(t *testing.T, file string, install bool) plugintest.Result {
	t.Helper()
	args := []string{"-manifest", file}
	if !install {
		args = append(args, "-skip-install")
	}
	return command(t, 10*time.Minute, k.env(t.TempDir()), k.validate, args...)
}

// install installs the manifest's platform for goos/goarch from archive
// under root, with the real krew, and returns the folder it installed to.
func (k krewTools) install(t *testing.T, root, manifest, archive, goos, goarch, version string) string {
	t.Helper()
	r := command(t, 5*time.Minute, k.env(root, "KREW_OS="+goos, "KREW_ARCH="+goarch),
		"kubectl", "krew", "install", "--manifest="+manifest, "--archive="+archive)
	if r.Code != 0 {
		t.Fatalf("kubectl krew install --manifest --archive for %s/%s: exit %d\n%s%s", goos, goarch, r.Code, r.Stdout, r.Stderr)
	}
	return filepath.Join(root, "store", "ns-doctor", version)
}

// readManifest reads a manifest as plain YAML: the validator says whether
// it is right; the tests only compare manifests.
func readManifest(t *testing.T, data []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := yaml.Unmarshal(data, &m); err != nil {
		t.Fatalf("parsing the manifest: %v\n%s", err, data)
	}
	return m
}

// platforms is spec.platforms of m.
func platforms(m map[string]any) []any {
	spec, _ := m["spec"].(map[string]any)
	list, _ := spec["platforms"].([]any)
	return list
}

// structure is m without what changes from release to release: the
// version, each platform's uri and sha256.
func structure(m map[string]any) map[string]any {
	out := deepCopy(m)
	spec := out["spec"].(map[string]any)
	delete(spec, "version")
	for _, p := range platforms(out) {
		delete(p.(map[string]any), "uri")
		delete(p.(map[string]any), "sha256")
	}
	return out
}

// deepCopy copies m through YAML.
func deepCopy(m map[string]any) map[string]any {
	data, err := yaml.Marshal(m)
	if err != nil {
		panic(err)
	}
	var out map[string]any
	if err := yaml.Unmarshal(data, &out); err != nil {
		panic(err)
	}
	return out
}

// releaseVersion is krew-release-bot's extractVersionFromTag: .Version in
// an addURIAndSha URL is the tag's first dotted number (v0.1.0 -> 0.1.0).
func releaseVersion(tag string) string {
	if v := regexp.MustCompile(`\d+(\.\d+)+`).FindString(tag); v != "" {
		return v
	}
	return tag
}

// renderTemplate renders krew/.krew.yaml as krew-release-bot does for a
// release tag (pkg/source/template.go; the bot itself is not on the Go
// module proxy): text/template over {TagName}, with addURIAndSha rendering
// its URL over {TagName, Version} and writing the uri and sha256 lines.
// where maps each release URL to the uri and sha256 to write, so a test
// can point the manifest at local archives.
func renderTemplate(t *testing.T, tag string, where func(url string) (uri, sha string, err error)) []byte {
	t.Helper()
	path := filepath.Join(repoRoot, "krew", ".krew.yaml")
	data, err := os.ReadFile(path)
	plugintest.Must(t, err)
	tmpl, err := template.New(".krew.yaml").Funcs(template.FuncMap{
		"addURIAndSha": func(urlTemplate, tag string) (string, error) {
			u, err := template.New("url").Parse(urlTemplate)
			if err != nil {
				return "", err
			}
			var url bytes.Buffer
			if err := u.Execute(&url, struct{ TagName, Version string }{tag, releaseVersion(tag)}); err != nil {
				return "", err
			}
			uri, sha, err := where(url.String())
			if err != nil {
				return "", err
			}
			// The bot's exact text: its sha256 line assumes 4 spaces.
			return fmt.Sprintf("uri: %s\n    sha256: %s", uri, sha), nil
		},
	}).Parse(string(data))
	if err != nil {
		t.Fatalf("krew/.krew.yaml: %v", err)
	}
	var out bytes.Buffer
	if err := tmpl.Execute(&out, struct{ TagName string }{tag}); err != nil {
		t.Fatalf("rendering krew/.krew.yaml for %s: %v", tag, err)
	}
	return out.Bytes()
}

// The committed manifest passes krew-index's validator and is exactly
// what the release bot would make of krew/.krew.yaml for its version, but
// for the sha256 values (placeholders until the release exists).
func TestCommittedManifestMatchesTemplate(t *testing.T) {
	krew := installKrew(t)
	file := filepath.Join(repoRoot, "plugins", "ns-doctor.yaml")
	if r := krew.validateManifest(t, file, false); r.Code != 0 {
		t.Errorf("validate-krew-manifest plugins/ns-doctor.yaml: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	data, err := os.ReadFile(file)
	plugintest.Must(t, err)
	committed := readManifest(t, data)
	sums := map[string]string{}
	for _, p := range platforms(committed) {
		p := p.(map[string]any)
		sums[fmt.Sprint(p["uri"])] = fmt.Sprint(p["sha256"])
	}
	version := committed["spec"].(map[string]any)["version"].(string)
	rendered := readManifest(t, renderTemplate(t, version, func(url string) (string, string, error) {
		sha, ok := sums[url]
		if !ok {
			return "", "", fmt.Errorf("the template's URL %s is not in plugins/ns-doctor.yaml", url)
		}
		return url, sha, nil
	}))
	if !reflect.DeepEqual(rendered, committed) {
		got, _ := yaml.Marshal(rendered)
		want, _ := yaml.Marshal(committed)
		t.Errorf("krew/.krew.yaml rendered for %s differs from plugins/ns-doctor.yaml:\nrendered:\n%s\ncommitted:\n%s", version, got, want)
	}
	// The caveats name the RBAC files users are pointed at.
	caveats := fmt.Sprint(committed["spec"].(map[string]any)["caveats"])
	for _, want := range []string{"docs/rbac", "ns-doctor-explain", "ns-doctor-purge", "completion"} {
		if !strings.Contains(caveats, want) {
			t.Errorf("caveats do not mention %q", want)
		}
	}
	for _, f := range []string{"explain-clusterrole.yaml", "purge-clusterrole.yaml"} {
		if _, err := os.Stat(filepath.Join(repoRoot, "docs", "rbac", f)); err != nil {
			t.Error(err)
		}
	}
}

// The validator the tests rely on rejects the mistakes krew-index
// rejects: it is wired, not waved through.
func TestKrewValidatorCatchesMistakes(t *testing.T) {
	krew := installKrew(t)
	data, err := os.ReadFile(filepath.Join(repoRoot, "plugins", "ns-doctor.yaml"))
	plugintest.Must(t, err)
	for _, tc := range []struct {
		name   string
		file   string
		mutate func(spec map[string]any)
		want   string
	}{
		{"not semver", "ns-doctor.yaml", func(spec map[string]any) { spec["version"] = "v1.2" }, "version"},
		{"named after another file", "nsdoctor.yaml", func(map[string]any) {}, `should be named "nsdoctor"`},
		{"upper-case sha256", "ns-doctor.yaml", func(spec map[string]any) {
			p := spec["platforms"].([]any)[0].(map[string]any)
			p["sha256"] = strings.ToUpper(p["sha256"].(string))
		}, "sha256"},
		{"overlapping selectors", "ns-doctor.yaml", func(spec map[string]any) {
			spec["platforms"].([]any)[0].(map[string]any)["selector"] = map[string]any{"matchLabels": map[string]any{"os": "darwin"}}
		}, "overlapping"},
	} {
		m := readManifest(t, data)
		tc.mutate(m["spec"].(map[string]any))
		out, err := yaml.Marshal(m)
		plugintest.Must(t, err)
		file := filepath.Join(t.TempDir(), tc.file)
		plugintest.Must(t, os.WriteFile(file, out, 0o644))
		r := krew.validateManifest(t, file, false)
		if r.Code == 0 || !strings.Contains(strings.ToLower(r.Stderr), tc.want) {
			t.Errorf("%s: validate-krew-manifest exit %d, want a failure naming %q:\n%s", tc.name, r.Code, tc.want, r.Stderr)
		}
	}
}
