package distribution

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"sigs.k8s.io/yaml"
)

// krewInstall installs platform p of manifest m under root (a KREW_ROOT)
// the way krew's installation package does: fetch the uri, check its
// sha256, unpack it into a staging folder, apply the files operations into
// store/<name>/<version>, check that bin lies inside, link
// bin/kubectl-<name, - as _> to it and store the receipt.
func krewInstall(root string, m manifest, p platform, goos string) (*installed, error) {
	u, err := url.Parse(p.URI)
	if err != nil || u.Scheme != "file" {
		return nil, fmt.Errorf("uri %q: only file:// archives can be fetched here", p.URI)
	}
	data, err := os.ReadFile(u.Path)
	if err != nil {
		return nil, fmt.Errorf("fetching %s: %w", p.URI, err)
	}
	if sum := sha256.Sum256(data); hex.EncodeToString(sum[:]) != p.Sha256 {
		return nil, fmt.Errorf("%s: sha256 %x, the manifest says %s", p.URI, sum, p.Sha256)
	}
	in := &installed{staging: filepath.Join(root, "downloads", m.Metadata.Name), dir: filepath.Join(root, "store", m.Metadata.Name, m.Spec.Version)}
	if in.archived, err = unpack(u.Path, data, in.staging); err != nil {
		return nil, fmt.Errorf("unpacking %s: %w", p.URI, err)
	}
	files := p.Files
	if files == nil {
		files = []fileOperation{{From: "*", To: "."}} // krew's default
	}
	for _, f := range files {
		if err := moveFiles(in.staging, in.dir, f); err != nil {
			return nil, err
		}
	}
	binPath := filepath.Join(in.dir, filepath.FromSlash(p.Bin))
	if !within(in.dir, binPath) {
		return nil, fmt.Errorf("bin %q leaves the install folder", p.Bin)
	}
	if info, err := os.Stat(binPath); err != nil || info.IsDir() {
		return nil, fmt.Errorf("bin %q is not in the installed files: %v", p.Bin, err)
	}
	link := "kubectl-" + strings.ReplaceAll(m.Metadata.Name, "-", "_")
	if goos == "windows" {
		link += ".exe"
	}
	binDir := filepath.Join(root, "bin")
	if err := os.MkdirAll(binDir, 0o755); err != nil {
		return nil, err
	}
	rel, err := filepath.Rel(binDir, binPath)
	if err != nil {
		return nil, err
	}
	if err := os.Symlink(rel, filepath.Join(binDir, link)); err != nil {
		return nil, fmt.Errorf("linking %s: %w", link, err)
	}
	receipt, err := yaml.Marshal(m)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(root, "receipts"), 0o755); err != nil {
		return nil, err
	}
	return in, os.WriteFile(filepath.Join(root, "receipts", m.Metadata.Name+".yaml"), receipt, 0o644)
}

// installed is what krewInstall did.
type installed struct {
	// staging is where the archive was unpacked; what the files operations
	// did not take is left there.
	staging string
	// dir is the install folder, store/<name>/<version>.
	dir string
	// archived names the archive's files.
	archived []string
}

// moveFiles is krew's file operation: `from` names a file (moved to `to`,
// or under its own name when `to` is ".") or is a glob whose matches go
// into the folder `to`; nothing may leave the two folders.
func moveFiles(from, to string, op fileOperation) error {
	if op.To != filepath.Clean(op.To) {
		return fmt.Errorf("files: to %q is not a clean path", op.To)
	}
	src := filepath.Join(from, filepath.FromSlash(op.From))
	if info, err := os.Stat(src); err == nil && !info.IsDir() {
		dst := filepath.Join(to, filepath.FromSlash(op.To))
		if op.To == "." {
			dst = filepath.Join(to, filepath.Base(src))
		}
		return move(from, to, src, dst)
	}
	matches, err := filepath.Glob(src)
	if err != nil || len(matches) == 0 {
		return fmt.Errorf("files: nothing in the archive matches %q", op.From)
	}
	for _, m := range matches {
		if err := move(from, to, m, filepath.Join(to, filepath.FromSlash(op.To), filepath.Base(m))); err != nil {
			return err
		}
	}
	return nil
}

func move(fromBase, toBase, src, dst string) error {
	if !within(fromBase, src) || !within(toBase, dst) {
		return fmt.Errorf("files: moving %s to %s leaves the archive or the install folder", src, dst)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	return os.Rename(src, dst)
}

func within(base, path string) bool {
	rel, err := filepath.Rel(base, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// unpack extracts a .tar.gz or .zip into dir, keeping file modes and
// refusing entries that would land outside dir, and names the files.
func unpack(name string, data []byte, dir string) ([]string, error) {
	var names []string
	write := func(entry string, mode os.FileMode, r io.Reader) error {
		names = append(names, entry)
		dst := filepath.Join(dir, filepath.FromSlash(entry))
		if !within(dir, dst) {
			return fmt.Errorf("entry %q leaves the folder", entry)
		}
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		f, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode.Perm())
		if err != nil {
			return err
		}
		if _, err := io.Copy(f, r); err != nil {
			_ = f.Close()
			return err
		}
		return f.Close()
	}
	switch {
	case strings.HasSuffix(name, ".zip"):
		zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			return nil, err
		}
		for _, f := range zr.File {
			if f.FileInfo().IsDir() {
				continue
			}
			rc, err := f.Open()
			if err != nil {
				return nil, err
			}
			err = write(f.Name, f.Mode(), rc)
			_ = rc.Close()
			if err != nil {
				return nil, err
			}
		}
		return names, nil
	case strings.HasSuffix(name, ".tar.gz"):
		gz, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			return nil, err
		}
		tr := tar.NewReader(gz)
		for {
			h, err := tr.Next()
			if err == io.EOF {
				return names, nil
			}
			if err != nil {
				return nil, err
			}
			if h.Typeflag != tar.TypeReg {
				continue
			}
			if err := write(h.Name, os.FileMode(h.Mode), tr); err != nil {
				return nil, err
			}
		}
	}
	return nil, fmt.Errorf("%s: neither .tar.gz nor .zip", name)
}
