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

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/version"
	"sigs.k8s.io/yaml"

	"github.com/ns-doctor/ns-doctor/test/support/plugintest"
)

// manifest mirrors krew's index.Plugin (krew itself cannot be fetched here).
type manifest struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		Version          string     `json:"version"`
		Homepage         string     `json:"homepage"`
		ShortDescription string     `json:"shortDescription"`
		Description      string     `json:"description"`
		Caveats          string     `json:"caveats"`
		Platforms        []platform `json:"platforms"`
	} `json:"spec"`
}

type platform struct {
	Selector *metav1.LabelSelector `json:"selector"`
	URI      string                `json:"uri"`
	Sha256   string                `json:"sha256"`
	Files    []fileOperation       `json:"files"`
	Bin      string                `json:"bin"`
}

type fileOperation struct {
	From string `json:"from"`
	To   string `json:"to"`
}

func readManifest(t *testing.T, data []byte) manifest {
	t.Helper()
	var m manifest
	// Strict, as krew's own reader: a misspelt key is an error, not a default.
	if err := yaml.UnmarshalStrict(data, &m); err != nil {
		t.Fatalf("parsing the manifest: %v\n%s", err, data)
	}
	return m
}

// krewPlatforms are the <os,arch> pairs krew-index's validator checks
// selectors against (cmd/validate-krew-manifest), plus newer ones.
var krewPlatforms = [][2]string{
	{"darwin", "amd64"}, {"darwin", "arm64"},
	{"linux", "386"}, {"linux", "amd64"}, {"linux", "arm"}, {"linux", "arm64"}, {"linux", "ppc64le"}, {"linux", "s390x"},
	{"windows", "386"}, {"windows", "amd64"}, {"windows", "arm64"},
}

var (
	safePluginName = regexp.MustCompile(`^[\w-]+$`)
	validSHA256    = regexp.MustCompile(`^[a-f0-9]{64}$`)
)

// validateManifest applies krew's rules (pkg/index/validation and
// cmd/validate-krew-manifest) to a manifest stored as <file>: the plugin
// name comes from the file name, as in krew-index.
func validateManifest(file string, m manifest) []error {
	var errs []error
	fail := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	name := strings.TrimSuffix(filepath.Base(file), ".yaml")
	if m.APIVersion != "krew.googlecontainertools.github.com/v1alpha2" || m.Kind != "Plugin" {
		fail("apiVersion/kind %s/%s, want krew.googlecontainertools.github.com/v1alpha2/Plugin", m.APIVersion, m.Kind)
	}
	if !safePluginName.MatchString(name) || m.Metadata.Name != name {
		fail("plugin name %q: must match %s and the file name %q", m.Metadata.Name, safePluginName, name)
	}
	if m.Spec.ShortDescription == "" || strings.ContainsAny(m.Spec.ShortDescription, "\r\n") {
		fail("shortDescription must be one non-empty line, got %q", m.Spec.ShortDescription)
	}
	// krew warns on these lengths; krew-index reviewers ask for them.
	for field, text := range map[string]string{"shortDescription": m.Spec.ShortDescription, "description": m.Spec.Description, "caveats": m.Spec.Caveats} {
		limit := map[bool]int{true: 70, false: 80}[field == "shortDescription"]
		for _, line := range strings.Split(text, "\n") {
			if len(line) > limit && strings.Contains(strings.TrimSpace(line), " ") {
				fail("%s has a line longer than %d characters: %q", field, limit, line)
			}
		}
	}
	if !strings.HasPrefix(m.Spec.Version, "v") {
		fail("version %q does not start with v", m.Spec.Version)
	} else if _, err := version.ParseSemantic(m.Spec.Version); err != nil {
		fail("version %q is not semver: %v", m.Spec.Version, err)
	}
	if m.Spec.Homepage == "" || m.Spec.Description == "" {
		fail("homepage and description must be set")
	}
	if len(m.Spec.Platforms) == 0 {
		fail("no platforms")
	}
	for i, p := range m.Spec.Platforms {
		if p.URI == "" || p.Bin == "" {
			fail("platforms[%d]: uri and bin must be set", i)
		}
		if !validSHA256.MatchString(p.Sha256) {
			fail("platforms[%d]: sha256 %q must be 64 lowercase hex digits", i, p.Sha256)
		}
		if p.Files != nil && len(p.Files) == 0 {
			fail("platforms[%d]: files must be unset or non-empty", i)
		}
		for _, f := range p.Files {
			if f.From == "" || f.To == "" {
				fail("platforms[%d]: a files entry lacks from or to", i)
			}
		}
		if err := validateSelector(p.Selector); err != nil {
			fail("platforms[%d]: %v", i, err)
			continue
		}
		goos, _ := matchAny(p.Selector)
		if goos == "" {
			fail("platforms[%d]: selector %v matches no platform krew supports", i, p.Selector)
		}
		if goos == "windows" && !strings.HasSuffix(p.Bin, ".exe") {
			fail("platforms[%d]: a Windows bin must end in .exe, got %q", i, p.Bin)
		}
	}
	for _, osArch := range krewPlatforms {
		var matching []int
		for i, p := range m.Spec.Platforms {
			if matches(p.Selector, osArch[0], osArch[1]) {
				matching = append(matching, i)
			}
		}
		if len(matching) > 1 {
			fail("platforms %v overlap: all select %s/%s", matching, osArch[0], osArch[1])
		}
	}
	return errs
}

func validateSelector(sel *metav1.LabelSelector) error {
	if sel == nil || (sel.MatchLabels == nil && len(sel.MatchExpressions) == 0) {
		return fmt.Errorf("selector must be set and not empty")
	}
	for k := range sel.MatchLabels {
		if k != "os" && k != "arch" {
			return fmt.Errorf("selector key %q not supported (os, arch)", k)
		}
	}
	for _, e := range sel.MatchExpressions {
		if e.Key != "os" && e.Key != "arch" {
			return fmt.Errorf("selector key %q not supported (os, arch)", e.Key)
		}
	}
	if _, err := metav1.LabelSelectorAsSelector(sel); err != nil {
		return fmt.Errorf("invalid selector: %w", err)
	}
	return nil
}

func matches(sel *metav1.LabelSelector, goos, goarch string) bool {
	s, err := metav1.LabelSelectorAsSelector(sel)
	return err == nil && s.Matches(labels.Set{"os": goos, "arch": goarch})
}

func matchAny(sel *metav1.LabelSelector) (string, string) {
	for _, p := range krewPlatforms {
		if matches(sel, p[0], p[1]) {
			return p[0], p[1]
		}
	}
	return "", ""
}

// matching is krew's GetMatchingPlatform: the first platform selecting
// goos/goarch.
func matching(m manifest, goos, goarch string) (platform, bool) {
	for _, p := range m.Spec.Platforms {
		if matches(p.Selector, goos, goarch) {
			return p, true
		}
	}
	return platform{}, false
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
// release tag (pkg/source/template.go): text/template over {TagName}, with
// addURIAndSha rendering its URL over {TagName, Version} and writing the
// uri and sha256 lines. where maps each release URL to the uri and sha256
// to write, so a test can point the manifest at local archives.
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

// The committed manifest passes krew's rules and is exactly what the
// release bot would make of krew/.krew.yaml for its version, but for the
// sha256 values (placeholders until the release exists).
func TestCommittedManifestMatchesTemplate(t *testing.T) {
	file := filepath.Join(repoRoot, "plugins", "ns-doctor.yaml")
	data, err := os.ReadFile(file)
	plugintest.Must(t, err)
	committed := readManifest(t, data)
	for _, err := range validateManifest(file, committed) {
		t.Error(err)
	}
	sums := map[string]string{}
	for _, p := range committed.Spec.Platforms {
		sums[p.URI] = p.Sha256
	}
	rendered := readManifest(t, renderTemplate(t, committed.Spec.Version, func(url string) (string, string, error) {
		sha, ok := sums[url]
		if !ok {
			return "", "", fmt.Errorf("the template's URL %s is not in plugins/ns-doctor.yaml", url)
		}
		return url, sha, nil
	}))
	if !reflect.DeepEqual(rendered, committed) {
		got, _ := yaml.Marshal(rendered)
		want, _ := yaml.Marshal(committed)
		t.Errorf("krew/.krew.yaml rendered for %s differs from plugins/ns-doctor.yaml:\nrendered:\n%s\ncommitted:\n%s", committed.Spec.Version, got, want)
	}
	// The caveats name the RBAC files users are pointed at.
	for _, want := range []string{"docs/rbac", "ns-doctor-explain", "ns-doctor-purge", "completion"} {
		if !strings.Contains(committed.Spec.Caveats, want) {
			t.Errorf("caveats do not mention %q", want)
		}
	}
	for _, f := range []string{"explain-clusterrole.yaml", "purge-clusterrole.yaml"} {
		if _, err := os.Stat(filepath.Join(repoRoot, "docs", "rbac", f)); err != nil {
			t.Error(err)
		}
	}
}

// The rules themselves catch what they are meant to catch.
func TestManifestRulesCatchMistakes(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(repoRoot, "plugins", "ns-doctor.yaml"))
	plugintest.Must(t, err)
	for _, tc := range []struct {
		name   string
		mutate func(*manifest)
		want   string
	}{
		{"no v", func(m *manifest) { m.Spec.Version = "0.1.0" }, "does not start with v"},
		{"not semver", func(m *manifest) { m.Spec.Version = "v1.2" }, "not semver"},
		{"name", func(m *manifest) { m.Metadata.Name = "nsdoctor" }, "file name"},
		{"sha", func(m *manifest) { m.Spec.Platforms[0].Sha256 = strings.ToUpper(m.Spec.Platforms[0].Sha256) }, "lowercase"},
		{"bin", func(m *manifest) { m.Spec.Platforms[1].Bin = "" }, "bin must be set"},
		{"overlap", func(m *manifest) {
			m.Spec.Platforms[0].Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"os": "darwin"}}
		}, "overlap"},
		{"selector key", func(m *manifest) { m.Spec.Platforms[2].Selector.MatchLabels["libc"] = "musl" }, "not supported"},
		{"exe", func(m *manifest) { m.Spec.Platforms[4].Bin = "kubectl-ns_doctor" }, ".exe"},
	} {
		m := readManifest(t, data)
		tc.mutate(&m)
		errs := validateManifest("ns-doctor.yaml", m)
		if !strings.Contains(fmt.Sprint(errs), tc.want) {
			t.Errorf("%s: errors %v, want one with %q", tc.name, errs, tc.want)
		}
	}
}
