package testkit

import (
	"errors"
	"os"
	"path/filepath"
)

// RepoRoot is the repository's root: the nearest directory above the
// working directory that holds go.work.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("repository root (a directory with go.work) not found above the working directory")
		}
		dir = parent
	}
}
