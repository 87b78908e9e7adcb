package routecheck

import (
	"regexp"
	"strings"
)

// location is one route of the gateway: a path matched exactly or as a
// prefix, and where it goes (a service, or nginx's own "return NNN").
type location struct {
	path, target string
	exact        bool
	// elements: the prefix matches whole path elements (Ingress Prefix,
	// HTTPRoute PathPrefix), not characters (nginx).
	elements bool
}

var (
	locationRE = regexp.MustCompile(`^\s*location\s+(=\s*)?(/\S*)\s*\{`)
	anyLocRE   = regexp.MustCompile(`^\s*location\b`)
	proxyRE    = regexp.MustCompile(`proxy_pass\s+http://(\w+)`)
	returnRE   = regexp.MustCompile(`return\s+(\d{3})`)
	chartRE    = regexp.MustCompile(`\{\s*path:\s*"([^"]*)",\s*match:\s*(Exact|Prefix),\s*service:\s*(\w+)\s*\}`)
)

// nginxLocations reads the locations of the nginx template: each goes where
// its block proxies to, else to what it returns first.
func nginxLocations(conf string) []location {
	lines := strings.Split(conf, "\n")
	var out []location
	for i, line := range lines {
		m := locationRE.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		block := line
		for _, next := range lines[i+1:] {
			if anyLocRE.MatchString(next) {
				break
			}
			block += "\n" + next
		}
		l := location{path: m[2], exact: m[1] != ""}
		if p := proxyRE.FindStringSubmatch(block); p != nil {
			l.target = p[1]
		} else if r := returnRE.FindStringSubmatch(block); r != nil {
			l.target = "return " + r[1]
		}
		out = append(out, l)
	}
	return out
}

// chartRoutes reads the chart's route table, one {path, match, service} a line.
func chartRoutes(tpl string) []location {
	var out []location
	for _, m := range chartRE.FindAllStringSubmatch(tpl, -1) {
		out = append(out, location{path: m[1], exact: m[2] == "Exact", elements: true, target: m[3]})
	}
	return out
}

// serve is where uri goes: an exact location, else the longest prefix.
func serve(locs []location, uri string) string {
	best, target := -1, ""
	for _, l := range locs {
		prefix := l.path
		if l.elements {
			prefix = strings.TrimSuffix(prefix, "/")
		}
		switch {
		case l.exact && uri == l.path:
			return l.target
		case l.exact:
		case l.elements && (prefix == "" || uri == prefix || strings.HasPrefix(uri, prefix+"/")) && len(prefix) > best,
			!l.elements && strings.HasPrefix(uri, prefix) && len(prefix) > best:
			best, target = len(prefix), l.target
		}
	}
	return target
}
