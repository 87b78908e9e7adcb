package webhook

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"
)

func TestDeliveryTokenClaims(t *testing.T) {
	body, err := deliveryBody("volunteer-updated", json.RawMessage(`{"id": "1001", "note": "a & b"}`))
	if err != nil {
		t.Fatal(err)
	}
	data := `{"id":"1001","note":"a & b"}`
	sum := sha256.Sum256([]byte(data))
	wantInt := base64.StdEncoding.EncodeToString(sum[:])
	now := time.Unix(1_800_000_000, 0)
	c := Claim{DeliveryID: "d1", ClientID: 501, URL: "https://hooks.example.org/in?x=1", EventID: "e1", EventType: "volunteer-updated", Body: body}

	for name, tc := range map[string]struct {
		format Format
		aud    string
		ttl    int64
	}{
		"eventreg: aud is the client id, 5 minutes": {FormatEventreg, "501", 300},
		"concat: aud is the webhook's URL, 120 s":   {FormatConCat, "https://hooks.example.org/in?x=1", 120},
	} {
		t.Run(name, func(t *testing.T) {
			c.Format = tc.format
			got, err := claimsOf(c, "http://issuer.test", now)
			if err != nil {
				t.Fatal(err)
			}
			if got.Audience != tc.aud || got.Expiry-got.IssuedAt != tc.ttl || got.IssuedAt != now.Unix() {
				t.Fatalf("aud %q, exp-iat %d", got.Audience, got.Expiry-got.IssuedAt)
			}
			if got.Subject != "webhook" || got.Issuer != "http://issuer.test" || got.ID != "d1" || got.EventID != "e1" {
				t.Fatalf("claims %+v", got)
			}
			if got.Integrity != wantInt {
				t.Fatalf("int %q, want standard base64 of SHA-256 of %s: %q", got.Integrity, data, wantInt)
			}
			if got.BodySHA256 != bodyHash(body) {
				t.Fatalf("body_sha256 %q", got.BodySHA256)
			}
		})
	}
	t.Run("int is padded standard base64, not base64url", func(t *testing.T) {
		got, _ := claimsOf(c, "i", now)
		if len(got.Integrity) != 44 || !strings.HasSuffix(got.Integrity, "=") {
			t.Fatalf("int %q", got.Integrity)
		}
	})
	t.Run("a body without data cannot be signed", func(t *testing.T) {
		if _, err := claimsOf(Claim{Body: []byte(`{"event":"x"}`)}, "i", now); err == nil {
			t.Fatal("signed claims for a body without data")
		}
	})
}

// stringifyCases are data whose bytes encoding/json (the producers) and
// JSON.stringify write differently, or that must stay as they are.
var stringifyCases = map[string]string{
	"HTML characters escaped by encoding/json": `{"name":"Tom \u0026 Jerry \u003ctm\u003e"}`,
	"line and paragraph separators":            `{"s":"a\u2028b\u2029c"}`,
	"control characters":                       `{"s":"\u0001\b\f\n\r\t\u001f \"\\ \/"}`,
	"non-ASCII, escaped and raw":               `{"s":"\u00e9 é 😀 \ud83d\ude00"}`,
	"numbers":                                  `{"a":1,"b":-0.5,"c":1.5e3,"d":1E-7,"e":12345678901234567,"f":0.1,"g":1e21,"h":100}`,
	"member order kept, whitespace dropped":    "{ \"z\" : [ 1 , true , null ] ,\n \"a\" : { } }",
}

// TestDataAsJSONStringifyWritesIt: the data of a delivery body is what
// JSON.stringify(JSON.parse(data)) writes, so a ConCat receiver hashing it
// gets the int claim. Checked against node when it is installed.
func TestDataAsJSONStringifyWritesIt(t *testing.T) {
	want := map[string]string{
		"HTML characters escaped by encoding/json": `{"name":"Tom & Jerry <tm>"}`,
		"line and paragraph separators":            "{\"s\":\"a\u2028b\u2029c\"}",
		"control characters":                       `{"s":"\u0001\b\f\n\r\t\u001f \"\\ /"}`,
		"non-ASCII, escaped and raw":               `{"s":"é é 😀 😀"}`,
		"numbers":                                  `{"a":1,"b":-0.5,"c":1500,"d":1e-7,"e":12345678901234567,"f":0.1,"g":1e+21,"h":100}`,
		"member order kept, whitespace dropped":    `{"z":[1,true,null],"a":{}}`,
	}
	node, _ := exec.LookPath("node")
	for name, in := range stringifyCases {
		t.Run(name, func(t *testing.T) {
			body, err := deliveryBody("user-updated", json.RawMessage(in))
			if err != nil {
				t.Fatal(err)
			}
			var b struct{ Data json.RawMessage }
			if err := json.Unmarshal(body, &b); err != nil {
				t.Fatal(err)
			}
			if string(b.Data) != want[name] {
				t.Fatalf("data %s, want %s", b.Data, want[name])
			}
			if node == "" {
				return
			}
			out, err := exec.Command(node, "-e", `process.stdout.write(JSON.stringify(JSON.parse(process.argv[1])))`, in).Output()
			if err != nil {
				t.Fatal(err)
			}
			// JSON.stringify loses integers past 2^53; the producers send none.
			if name != "numbers" && string(out) != string(b.Data) {
				t.Fatalf("JSON.stringify wrote %s, the body has %s", out, b.Data)
			}
		})
	}
}
