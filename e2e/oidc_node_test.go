package e2e

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/eventreg/eventreg/e2e/stack"
)

// openIDClientDir installs the openid-client npm package pinned by
// testdata/openid-client/package-lock.json (npm ci) once per lock file, in
// the user's cache directory, and returns the directory to run rp.mjs in.
func openIDClientDir(t *testing.T) string {
	t.Helper()
	src := filepath.Join("testdata", "openid-client")
	lock, err := os.ReadFile(filepath.Join(src, "package-lock.json"))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(lock)
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	dir := filepath.Join(cache, "eventreg-e2e", "openid-client-"+hex.EncodeToString(sum[:8]))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"package.json", "package-lock.json", "rp.mjs"} {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "openid-client")); err != nil {
		cmd := exec.Command("npm", "ci", "--no-audit", "--no-fund")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("npm ci (openid-client from the npm registry): %v\n%s", err, out)
		}
	}
	return dir
}

// TestOIDCRelyingPartyOpenIDClientNode signs a user in through the gateway
// with a relying party from another ecosystem: the openid-client npm package
// on Node (testdata/openid-client/rp.mjs), the person acting in headless
// Chromium. openid-client verifies the ID token (ES256, this app's
// algorithm, against the JWKS), the nonce, state and the response's iss;
// the script checks at_hash; then it reads UserInfo.
func TestOIDCRelyingPartyOpenIDClientNode(t *testing.T) {
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed (apt-get install nodejs npm): the openid-client relying party needs it")
	}
	dir := openIDClientDir(t)
	s := stack.Start(t, stack.Options{})
	gw := s.GatewayURL
	cb := startAuthCallback(t)
	ctx := chromium(t)

	cmd := exec.Command("node", "rp.mjs", gw, oidcForumID, oidcForumSecret, authRedirectURI)
	cmd.Dir = dir
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	lines := make(chan []byte, 2)
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			lines <- append([]byte(nil), sc.Bytes()...)
		}
		close(lines)
	}()
	next := func(v any) {
		t.Helper()
		select {
		case l, ok := <-lines:
			if !ok {
				errOut, _ := io.ReadAll(stderr)
				t.Fatalf("the relying party stopped: %s", errOut)
			}
			if err := json.Unmarshal(l, v); err != nil {
				t.Fatalf("%v: %s", err, l)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("the relying party did not answer")
		}
	}
	var start struct{ AuthorizationURL string }
	next(&start)
	run(t, ctx, toConsent(start.AuthorizationURL, authAlice, authAlicePass), authorizeApp())
	q := cb.wait(t)
	if _, err := io.WriteString(stdin, authRedirectURI+"?"+q.Encode()+"\n"); err != nil {
		t.Fatal(err)
	}
	var done struct {
		Claims    map[string]any
		NonceSent string
		Userinfo  map[string]any
	}
	next(&done)
	t.Run("openid-client accepts the ID token: signature, iss, aud, nonce, at_hash", func(t *testing.T) {
		if done.Claims["sub"] != "1001" || done.Claims["iss"] != gw || done.Claims["aud"] != oidcForumID || done.Claims["nonce"] != done.NonceSent {
			t.Fatalf("%v (nonce sent %q)", done.Claims, done.NonceSent)
		}
	})
	t.Run("openid-client reads UserInfo for the same subject", func(t *testing.T) {
		if done.Userinfo["sub"] != "1001" || done.Userinfo["email"] != "alice@example.org" || done.Userinfo["preferred_username"] != "alice" {
			t.Fatalf("%v", done.Userinfo)
		}
	})
}
