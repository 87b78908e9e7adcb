package deploytest

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// outsidePaths are the places beside the repository that its files once
// pointed to (the project's working notes), built from parts so that this
// file does not name them itself.
var outsidePaths = func() []string {
	notes := "shared"
	return []string{"../" + notes + "/", "/work/" + notes, notes + "/spec/", notes + "/DESIGN.md", notes + "/STYLE.md"}
}()

// TestNothingPointsOutsideTheRepository: the repository stands alone. No
// tracked file names a path beside it, and no relative link of a Markdown
// file leads out of it: what a reader needs is copied into docs/.
func TestNothingPointsOutsideTheRepository(t *testing.T) {
	root := repoRoot(t)
	args := []string{"-C", root, "grep", "-n", "-I", "-F"}
	for _, p := range outsidePaths {
		args = append(args, "-e", p)
	}
	out, err := exec.Command("git", args...).Output()
	if len(out) > 0 {
		t.Errorf("these lines point outside the repository (copy what they need into docs/):\n%s", out)
	}
	var exit *exec.ExitError
	if err != nil && !(errors.As(err, &exit) && exit.ExitCode() == 1) { // 1: no match
		t.Fatalf("git grep: %v", err)
	}
	files, err := exec.Command("git", "-C", root, "ls-files", "*.md").Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	for _, rel := range strings.Fields(string(files)) {
		text, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			t.Fatal(err)
		}
		for _, link := range linksOutside(rel, string(text)) {
			t.Errorf("%s links %s, outside the repository", rel, link)
		}
	}
}

// mdLink is the target of a Markdown link or image: ](target) or ](target "title").
var mdLink = regexp.MustCompile(`\]\(\s*<?([^)\s>]+)`)

// linksOutside returns the relative link targets of file (a path from the
// repository's root) that resolve above the root. Absolute URLs, anchors
// and absolute paths are left alone.
func linksOutside(file, text string) []string {
	var out []string
	for _, m := range mdLink.FindAllStringSubmatch(text, -1) {
		target := m[1]
		if strings.Contains(target, "://") || strings.HasPrefix(target, "#") || strings.HasPrefix(target, "/") || strings.HasPrefix(target, "mailto:") {
			continue
		}
		resolved := filepath.ToSlash(filepath.Clean(filepath.Join(filepath.Dir(file), target)))
		if resolved == ".." || strings.HasPrefix(resolved, "../") {
			out = append(out, target)
		}
	}
	return out
}

// TestLinksOutsideFindsEscapes: a link climbing above the root is found,
// one that stays inside (however it climbs) is not.
func TestLinksOutsideFindsEscapes(t *testing.T) {
	text := "[a](../libs/x.go) [b](../../notes.md) [c](decisions/0001-libraries.md#why) " +
		"[d](https://example.org/../x) [e](#anchor) ![f](../../../img.png \"title\")"
	got := linksOutside("docs/api.md", text)
	if want := []string{"../../notes.md", "../../../img.png"}; !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if got := linksOutside("README.md", "[g](../x.md)"); !slices.Equal(got, []string{"../x.md"}) {
		t.Errorf("a link from the root's README: got %v", got)
	}
}
