package e2e

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// imageEnv is each service's configuration in the image tests: the values
// docker-compose.yaml gives, on the test's own network.
func imageEnv(svc string) map[string]string {
	env := map[string]string{
		"PUBLIC_ADDR": ":8080", "INTERNAL_ADDR": ":9090", "OPS_ADDR": ":9091", "REDIS_URL": "redis://redis:6379/0", "LOG_LEVEL": "info",
		"SHUTDOWN_DELAY": "2s", "AUTH_ISSUER": "https://127.0.0.1:8443", "GOMEMLIMIT": "230MiB",
		"DATABASE_URL":      fmt.Sprintf("postgres://%[1]s:%[1]s@postgres:5432/%[1]s?sslmode=disable", svc),
		"INTERNAL_AUTH_KEY": "image-test-only-internal-auth-key-0123456789",
	}
	if svc == "auth" {
		env["KEY_ENCRYPTION_KEY"] = "Y29tcG9zZS1kZXYtb25seS1rZXktZW5jcnlwdC1rZXk="
		env["CLIENT_SECRET_KEY"] = "image-test-only-client-secret-key-0123456789"
		env["USERS_INTERNAL_URL"] = "http://users:9090"
		return env
	}
	env["AUTH_JWKS_URL"] = "http://auth:9090/.well-known/jwks.json"
	env["CURSOR_KEY"] = "image-test-only-cursor-key-0123456789abcdef"
	env["CONVENTION_ID"] = "2026"
	env["USERS_INTERNAL_URL"] = "http://users:9090"
	env["AUTH_INTERNAL_URL"] = "http://auth:9090"
	if svc == "users" {
		env["VOLUNTEERS_INTERNAL_URL"] = "http://volunteers:9090"
		env["VOLUNTEERS_PUBLIC_URL"] = "http://volunteers:8080"
		env["REGISTRATIONS_PUBLIC_URL"] = "http://registrations:8080"
	}
	return env
}

// TestImages runs each service image as the chart and compose run it (read-only
// root filesystem, the image's non-root user, every capability dropped) against
// real PostgreSQL and Redis containers: `version`; `serve` not ready (its
// `healthcheck` exits non-zero) until its schema is migrated, then ready; and
// SIGTERM ending it cleanly within the grace period.
func TestImages(t *testing.T) {
	needContainers(t)
	root := repoRoot(t)
	network := randomName("eventreg-images")
	docker(t, "network", "create", network)
	var containers []string
	t.Cleanup(func() {
		for _, c := range containers {
			_, _ = dockerTry("rm", "-f", "-v", c)
		}
		_, _ = dockerTry("network", "rm", network)
	})
	start := func(name, alias string, args ...string) {
		t.Helper()
		containers = append(containers, name)
		docker(t, append([]string{"run", "-d", "--name", name, "--network", network, "--network-alias", alias}, args...)...)
	}

	pg, redis := network+"-postgres", network+"-redis"
	start(pg, "postgres", "-e", "POSTGRES_PASSWORD=postgres",
		"-v", filepath.Join(root, "deploy/compose/postgres-databases.sql")+":/docker-entrypoint-initdb.d/10-databases.sql:ro",
		thirdParty("postgres:17.6-alpine"))
	start(redis, "redis", thirdParty("redis:7.4.6-alpine"))
	eventually(t, 2*time.Minute, "PostgreSQL ready", func() error {
		_, err := dockerTry("exec", pg, "pg_isready", "-h", "127.0.0.1", "-U", "postgres")
		return err
	})

	const grace = 25 * time.Second // the chart's terminationGracePeriodSeconds and compose's stop_grace_period
	running := map[string]string{}
	for _, svc := range []string{"auth", "users", "volunteers", "registrations", "dealers"} {
		image := serviceImage(svc)
		var envArgs []string
		for k, v := range imageEnv(svc) {
			envArgs = append(envArgs, "-e", k+"="+v)
		}
		oneShot := func(args ...string) (string, error) {
			return dockerTry(append(append(append([]string{"run", "--rm", "--network", network}, hardened...), envArgs...), append([]string{image}, args...)...)...)
		}
		name := network + "-" + svc
		t.Run(svc, func(t *testing.T) {
			user := docker(t, "image", "inspect", "-f", "{{.Config.User}}", image)
			if user == "" || strings.HasPrefix(user, "0") || strings.HasPrefix(user, "root") {
				t.Errorf("%s runs as %q: want a numeric non-root user", image, user)
			}
			out, err := oneShot("version")
			if err != nil || !strings.Contains(out, svc) {
				t.Errorf("%s version: %v %q", svc, err, out)
			}

			// serve before its schema exists: running, and not ready
			start(name, svc, append(append(append([]string{}, hardened...), envArgs...), image, "serve")...)
			healthcheck := func() error {
				_, err := dockerTry("exec", name, "/usr/local/bin/"+svc, "healthcheck")
				return err
			}
			for i := 0; i < 3; i++ {
				time.Sleep(time.Second)
				if docker(t, "inspect", "-f", "{{.State.Running}}", name) != "true" {
					t.Fatalf("%s serve exited before its schema was migrated\n%s", svc, describe(name))
				}
				if healthcheck() == nil {
					t.Fatalf("%s healthcheck answered 0 before its schema was migrated", svc)
				}
			}
			if uid := containerUID(t, name); uid == "0" {
				t.Errorf("%s serve runs as root", svc)
			}

			if out, err := oneShot("migrate", "up"); err != nil {
				t.Fatalf("%s migrate up: %v\n%s", svc, err, out)
			}
			eventually(t, 90*time.Second, svc+" healthcheck answering 0 once migrated", healthcheck)
			running[svc] = name
		})
	}

	// SIGTERM, as Kubernetes and compose stop a container: a clean exit (0)
	// well within the grace period.
	for _, svc := range []string{"dealers", "registrations", "volunteers", "users", "auth"} {
		name, ok := running[svc]
		if !ok {
			continue
		}
		t.Run(svc+" stops on SIGTERM", func(t *testing.T) {
			began := time.Now()
			docker(t, "stop", "-t", fmt.Sprint(int(grace.Seconds())), name)
			took := time.Since(began)
			if code := exitCode(t, name); code != "0" {
				t.Errorf("%s exited %s on SIGTERM\n%s", svc, code, describe(name))
			}
			if took >= grace {
				t.Errorf("%s took %s to stop: the grace period is %s", svc, took, grace)
			}
			if logs := describe(name); strings.Contains(logs, "panic") {
				t.Errorf("%s panicked while stopping\n%s", svc, logs)
			}
			t.Logf("%s stopped in %s", svc, took.Round(10*time.Millisecond))
		})
	}
}
