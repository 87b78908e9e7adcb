package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/eventreg/eventreg/e2e/stack"
)

// The container tests run the images and the compose file on a real Docker
// engine. `make test-images` and `make test-compose` (and `make test`, when an
// engine can be started) prepare the engine, Compose, buildx and, on a machine
// without a registry, the stand-in images (deploy/scripts/docker.sh), then run
// them with EVENTREG_TEST_CONTAINERS=1.
func needContainers(t *testing.T) {
	t.Helper()
	if os.Getenv("EVENTREG_TEST_CONTAINERS") != "1" {
		t.Skip("container tests: run `make test-images` / `make test-compose` (they need a Docker engine)")
	}
}

// standins reports whether the third-party images are local stand-ins
// (deploy/standins) rather than the official ones.
func standins() bool { return os.Getenv("EVENTREG_STANDINS") == "1" }

// thirdParty names the image the project runs for an official one.
func thirdParty(official string) string {
	if !standins() {
		return official
	}
	return map[string]string{
		"postgres:17.6-alpine": "offline/postgres:17-standin",
		"redis:7.4.6-alpine":   "offline/redis:7-standin",
	}[official]
}

// serviceImage is the image of a service built from deploy/docker/Dockerfile.
func serviceImage(svc string) string {
	tag := os.Getenv("EVENTREG_TAG")
	if tag == "" {
		tag = "dev"
	}
	return "ghcr.io/eventreg/eventreg-" + svc + ":" + tag
}

// docker runs the docker CLI and returns its combined output; it fails the
// test on a non-zero exit.
func docker(t testing.TB, args ...string) string {
	t.Helper()
	out, err := dockerTry(args...)
	if err != nil {
		t.Fatalf("docker %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// dockerTry runs the docker CLI and returns its output and error.
func dockerTry(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	var b bytes.Buffer
	cmd := exec.CommandContext(ctx, "docker", args...)
	cmd.Stdout, cmd.Stderr = &b, &b
	err := cmd.Run()
	return strings.TrimSpace(b.String()), err
}

func randomName(prefix string) string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return prefix + "-" + hex.EncodeToString(b)
}

// hardened is how the chart and compose run every service container: a
// read-only root filesystem, no capabilities, no privilege escalation, a
// writable /tmp only, the image's own (non-root) user.
var hardened = []string{"--read-only", "--cap-drop", "ALL", "--security-opt", "no-new-privileges:true",
	"--tmpfs", "/tmp", "--memory", "256m"}

// repoRoot is the repository's root.
func repoRoot(t testing.TB) string {
	t.Helper()
	root, err := stack.FindRoot()
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// containerUID is the real uid of a running container's first process, read
// from the host's /proc.
func containerUID(t testing.TB, name string) string {
	t.Helper()
	pid := docker(t, "inspect", "-f", "{{.State.Pid}}", name)
	status, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		t.Fatalf("reading the status of %s (pid %s): %v", name, pid, err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if f := strings.Fields(line); len(f) > 1 && f[0] == "Uid:" {
			return f[1]
		}
	}
	t.Fatalf("no Uid line for %s", name)
	return ""
}

// exitCode is a stopped container's exit code.
func exitCode(t testing.TB, name string) string {
	return docker(t, "inspect", "-f", "{{.State.ExitCode}}", name)
}

func describe(name string) string {
	out, _ := dockerTry("logs", "--tail", "30", name)
	return fmt.Sprintf("last log lines of %s:\n%s", name, out)
}
