package deploytest

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"text/template"
)

// gatewayParams are the fields deploy/nginx/nginx.conf.tmpl reads. A struct, not
// a map, so a field the template gains or loses fails the render.
type gatewayParams struct {
	Prefix, HTTPListen, TLSListen, CertFile, KeyFile string
	Auth, Users, Volunteers, Registrations, Dealers  string
	Daemon                                           bool
	User, ErrorLog, AccessLog                        string
	// HTTPSOrigin is the public https origin (set when the issuer is https):
	// plain-HTTP /oauth/ is redirected there.
	HTTPSOrigin string
}

// composeGateway is how docker compose runs the gateway (docker-compose.yaml).
var composeGateway = gatewayParams{
	Prefix:        "/tmp/nginx",
	HTTPListen:    "8080",
	TLSListen:     "8443",
	CertFile:      "/etc/nginx/tls/tls.crt",
	KeyFile:       "/etc/nginx/tls/tls.key",
	Auth:          "auth:8080",
	Users:         "users:8080",
	Volunteers:    "volunteers:8080",
	Registrations: "registrations:8080",
	Dealers:       "dealers:8080",
	Daemon:        false,
	User:          "",
	ErrorLog:      "/dev/stderr",
	AccessLog:     "/dev/stdout",
	// the gateway's command fills it in with envsubst: AUTH_ISSUER's origin, which
	// follows the published port (EVENTREG_HTTPS_PORT in docker-compose.yaml)
	HTTPSOrigin: "${EVENTREG_HTTPS_ORIGIN}",
}

const composeConfHeader = "# GENERATED from deploy/nginx/nginx.conf.tmpl for docker compose; do not edit.\n" +
	"# Regenerate: cd deploy/deploytest && go test -run TestComposeGatewayConfig -update\n"

func renderGateway(t testing.TB, p gatewayParams) string {
	t.Helper()
	tmpl, err := template.New("nginx.conf.tmpl").Option("missingkey=error").
		Parse(readRepoFile(t, "deploy/nginx/nginx.conf.tmpl"))
	if err != nil {
		t.Fatalf("parsing deploy/nginx/nginx.conf.tmpl: %v", err)
	}
	var b bytes.Buffer
	if err := tmpl.Execute(&b, p); err != nil {
		t.Fatalf("rendering deploy/nginx/nginx.conf.tmpl: %v", err)
	}
	return b.String()
}

func TestComposeGatewayConfig(t *testing.T) {
	got := composeConfHeader + renderGateway(t, composeGateway)
	checkGolden(t, repoPath(t, "deploy/nginx/compose.conf"), got)

	conf := parseNginx(t, got)
	for _, want := range [][]string{
		{"daemon", "off"},
		{"pid", "/tmp/nginx/nginx.pid"},
		{"error_log", "/dev/stderr", "warn"},
	} {
		if d := conf.find(want[0]); d == nil || strings.Join(d.args, " ") != strings.Join(want[1:], " ") {
			t.Errorf("compose.conf: want `%s`, got %v", strings.Join(want, " "), d)
		}
	}
	if conf.find("user") != nil {
		t.Error("compose.conf: nginx runs as uid 101 in compose; a `user` directive only applies to a root master")
	}
	server := conf.find("http").find("server")
	var listens []string
	for _, d := range server.children {
		if d.name == "listen" {
			listens = append(listens, strings.Join(d.args, " "))
		}
	}
	if strings.Join(listens, ",") != "8080,8443 ssl" {
		t.Errorf("compose.conf listens on %q, want 8080 and 8443 ssl", listens)
	}
	var hsts *directive
	for _, d := range server.all("add_header") {
		if len(d.args) > 0 && d.args[0] == "Strict-Transport-Security" {
			hsts = d
		}
	}
	if hsts == nil || strings.Join(hsts.args, " ") != "Strict-Transport-Security $hsts always" {
		t.Errorf("compose.conf: the TLS server must send HSTS always, got %v", hsts)
	}
	var oauthRedirect *directive
	for _, loc := range server.all("location") {
		if len(loc.args) == 1 && loc.args[0] == "/oauth/" {
			if ifs := loc.find("if"); ifs != nil {
				oauthRedirect = ifs.find("return")
			}
		}
	}
	if oauthRedirect == nil || strings.Join(oauthRedirect.args, " ") != "308 ${EVENTREG_HTTPS_ORIGIN}$request_uri" {
		t.Errorf("compose.conf: plain-HTTP /oauth/ must be a 308 to the https origin the gateway fills in, got %v", oauthRedirect)
	}
	// ... which is the issuer's, on whatever port is published
	p := loadCompose(t)
	gw := p.Services["gateway"]
	origin := gw.Environment["EVENTREG_HTTPS_ORIGIN"]
	if issuer := p.Services["auth"].Environment["AUTH_ISSUER"]; origin == nil || issuer == nil || *origin != *issuer {
		t.Errorf("the gateway's EVENTREG_HTTPS_ORIGIN %v is not auth's AUTH_ISSUER %v", deref(origin), deref(issuer))
	}
	if cmd := strings.Join(gw.Command, " "); !strings.Contains(cmd, "envsubst '${EVENTREG_HTTPS_ORIGIN}' </etc/eventreg/nginx.conf >/tmp/nginx/nginx.conf") ||
		!strings.Contains(cmd, "exec nginx -e stderr -c /tmp/nginx/nginx.conf") {
		t.Errorf("the gateway's command does not fill in its configuration and run nginx on it: %q", cmd)
	}
	var xff *directive
	for _, d := range conf.find("http").all("proxy_set_header") {
		if len(d.args) > 0 && d.args[0] == "X-Forwarded-For" {
			xff = d
		}
	}
	if xff == nil || strings.Join(xff.args, " ") != "X-Forwarded-For $remote_addr" {
		t.Errorf("compose.conf: the gateway is the edge and must replace a client's X-Forwarded-For with the peer, got %v", xff)
	}
	for _, up := range conf.find("http").all("upstream") {
		name := up.args[0]
		if s := up.find("server"); s == nil || s.args[0] != name+":8080" {
			t.Errorf("upstream %s: want server %s:8080, got %v", name, name, s)
		}
	}
}

// --- a small nginx configuration parser, enough for the gateway's file ---

type directive struct {
	name     string
	args     []string
	children []*directive // nil unless the directive has a block
}

func (d *directive) String() string {
	if d == nil {
		return "<missing>"
	}
	return d.name + " " + strings.Join(d.args, " ")
}

func (d *directive) find(name string) *directive {
	if d == nil {
		return nil
	}
	for _, c := range d.children {
		if c.name == name {
			return c
		}
	}
	return nil
}

func (d *directive) all(name string) []*directive {
	var out []*directive
	for _, c := range d.children {
		if c.name == name {
			out = append(out, c)
		}
	}
	return out
}

func tokenizeNginx(src string) ([]string, error) {
	var toks []string
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '#':
			for i < len(src) && src[i] != '\n' {
				i++
			}
		case c == '{' || c == '}' || c == ';':
			toks = append(toks, string(c))
			i++
		case c == '\'' || c == '"':
			var b strings.Builder
			j := i + 1
			for ; j < len(src) && src[j] != c; j++ {
				if src[j] == '\\' && j+1 < len(src) {
					j++
				}
				b.WriteByte(src[j])
			}
			if j >= len(src) {
				return nil, fmt.Errorf("unterminated quoted string at byte %d", i)
			}
			toks = append(toks, "\x00"+b.String()) // \x00 marks a quoted word, never a brace
			i = j + 1
		default:
			j := i
			for j < len(src) && !strings.ContainsRune(" \t\r\n{};", rune(src[j])) {
				if strings.HasPrefix(src[j:], "${") { // a variable in braces, as nginx reads it
					if end := strings.IndexByte(src[j:], '}'); end > 0 {
						j += end
					}
				}
				j++
			}
			toks = append(toks, src[i:j])
			i = j
		}
	}
	return toks, nil
}

func parseNginx(t testing.TB, src string) *directive {
	t.Helper()
	toks, err := tokenizeNginx(src)
	if err != nil {
		t.Fatalf("tokenizing nginx config: %v", err)
	}
	root := &directive{name: "main"}
	stack := []*directive{root}
	var words []string
	for _, tok := range toks {
		top := stack[len(stack)-1]
		switch tok {
		case ";":
			if len(words) == 0 {
				t.Fatalf("nginx config: empty directive in %s", top)
			}
			top.children = append(top.children, &directive{name: words[0], args: words[1:]})
			words = nil
		case "{":
			if len(words) == 0 {
				t.Fatalf("nginx config: block without a name in %s", top)
			}
			d := &directive{name: words[0], args: words[1:], children: []*directive{}}
			top.children = append(top.children, d)
			stack = append(stack, d)
			words = nil
		case "}":
			if len(words) != 0 || len(stack) == 1 {
				t.Fatalf("nginx config: unbalanced } after %q", words)
			}
			stack = stack[:len(stack)-1]
		default:
			words = append(words, strings.TrimPrefix(tok, "\x00"))
		}
	}
	if len(stack) != 1 || len(words) != 0 {
		t.Fatal("nginx config: unterminated block or directive")
	}
	return root
}

// --- nginx's location selection (https://nginx.org/en/docs/http/ngx_http_core_module.html#location) ---

type location struct {
	modifier string // "", "=", "^~", "~", "~*"
	uri      string
	re       *regexp.Regexp
	target   string // upstream name of proxy_pass, or "return <code>"
}

func (l location) String() string {
	return strings.TrimSpace("location " + l.modifier + " " + l.uri)
}

func newLocation(t testing.TB, modifier, uri, target string) location {
	t.Helper()
	l := location{modifier: modifier, uri: uri, target: target}
	switch modifier {
	case "~":
		l.re = regexp.MustCompile(uri)
	case "~*":
		l.re = regexp.MustCompile("(?i)" + uri)
	case "", "=", "^~":
	default:
		t.Fatalf("unknown location modifier %q", modifier)
	}
	return l
}

// serverLocations lists the server block's locations in file order, named ones left out.
func serverLocations(t testing.TB, conf *directive) []location {
	t.Helper()
	server := conf.find("http").find("server")
	if server == nil {
		t.Fatal("nginx config: no http { server { } } block")
	}
	var locs []location
	for _, d := range server.all("location") {
		var modifier, uri string
		switch len(d.args) {
		case 1:
			uri = d.args[0]
		case 2:
			modifier, uri = d.args[0], d.args[1]
		default:
			t.Fatalf("nginx config: cannot read %s", d)
		}
		if strings.HasPrefix(uri, "@") {
			continue
		}
		var target string
		if p := d.find("proxy_pass"); p != nil {
			target = strings.TrimPrefix(p.args[0], "http://")
		} else if r := d.find("return"); r != nil {
			target = "return " + r.args[0]
		} else {
			t.Fatalf("nginx config: %s neither proxies nor returns", d)
		}
		locs = append(locs, newLocation(t, modifier, uri, target))
	}
	return locs
}

// matchLocation picks the location nginx uses for uri: an exact (=) match; else
// the longest prefix match, kept at once if it is ^~; else the first regex in
// file order that matches; else that longest prefix. ok is false if none matches.
func matchLocation(locs []location, uri string) (location, bool) {
	var longest *location
	for i, l := range locs {
		switch l.modifier {
		case "=":
			if uri == l.uri {
				return l, true
			}
		case "", "^~":
			if strings.HasPrefix(uri, l.uri) && (longest == nil || len(l.uri) > len(longest.uri)) {
				longest = &locs[i]
			}
		}
	}
	if longest != nil && longest.modifier == "^~" {
		return *longest, true
	}
	for _, l := range locs {
		if l.re != nil && l.re.MatchString(uri) {
			return l, true
		}
	}
	if longest != nil {
		return *longest, true
	}
	return location{}, false
}

func TestMatchLocationFollowsNginxRules(t *testing.T) {
	locs := []location{
		newLocation(t, "=", "/", "exact-root"),
		newLocation(t, "", "/", "root-prefix"),
		newLocation(t, "", "/docs/", "docs-prefix"),
		newLocation(t, "^~", "/images/", "images-stop"),
		newLocation(t, "~", `\.(gif|jpg)$`, "first-regex"),
		newLocation(t, "~*", `\.JPG$`, "second-regex"),
		newLocation(t, "", "/docs/long/", "longer-prefix"),
	}
	for uri, want := range map[string]string{
		"/":                "exact-root",    // = wins
		"/index.html":      "root-prefix",   // only prefix
		"/docs/a.html":     "docs-prefix",   // longest prefix, no regex matches
		"/docs/long/x":     "longer-prefix", // longest prefix even when declared later
		"/docs/a.jpg":      "first-regex",   // regex beats prefix
		"/images/a.jpg":    "images-stop",   // ^~ stops the regex search
		"/x/A.JPG":         "second-regex",  // case-insensitive regex; the first is case-sensitive
		"/docs/long/a.gif": "first-regex",   // regex beats even the longest prefix
	} {
		got, ok := matchLocation(locs, uri)
		if !ok || got.target != want {
			t.Errorf("%s: matched %v (%s), want %s", uri, got, got.target, want)
		}
	}
	if _, ok := matchLocation(locs[2:3], "/other"); ok {
		t.Error("/other matched /docs/")
	}
}
