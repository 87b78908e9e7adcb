package suite

import (
	"regexp"
	"testing"

	"github.com/eventreg/eventreg/bench/internal/report"
)

func names(groups [][]scenario) [][]string {
	var out [][]string
	for _, g := range groups {
		var n []string
		for _, sc := range g {
			n = append(n, sc.name)
		}
		out = append(out, n)
	}
	return out
}

func TestGroupScenariosPairsFirstAndDeepPages(t *testing.T) {
	all := []scenario{{name: report.ClientCredentials}, {name: report.UsersSearchFirst}, {name: report.UsersSearchDeep},
		{name: report.RegistrationsFirst}, {name: report.RegistrationsDeep}, {name: report.DepartmentsList}}
	cases := []struct {
		name   string
		filter string
		want   [][]string
	}{
		{"everything", "", [][]string{{report.ClientCredentials}, {report.UsersSearchFirst, report.UsersSearchDeep},
			{report.RegistrationsFirst, report.RegistrationsDeep}, {report.DepartmentsList}}},
		{"a pair by its prefix", "^registrations-search", [][]string{{report.RegistrationsFirst, report.RegistrationsDeep}}},
		{"half a pair alone", "users-search-deep", [][]string{{report.UsersSearchDeep}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var re *regexp.Regexp
			if c.filter != "" {
				re = regexp.MustCompile(c.filter)
			}
			got := names(groupScenarios(all, re))
			if len(got) != len(c.want) {
				t.Fatalf("got %v, want %v", got, c.want)
			}
			for i := range got {
				if len(got[i]) != len(c.want[i]) {
					t.Fatalf("got %v, want %v", got, c.want)
				}
				for j := range got[i] {
					if got[i][j] != c.want[i][j] {
						t.Fatalf("got %v, want %v", got, c.want)
					}
				}
			}
		})
	}
}
