package volunteer

import (
	"slices"
	"testing"

	"github.com/eventreg/eventreg/libs/authapi"
)

func TestChangeEvents(t *testing.T) {
	choice := func(id int64, states ...string) Choice { return Choice{DepartmentID: id, States: states} }
	after := func(choices ...Choice) Volunteer {
		v := Volunteer{ConventionID: "2026", UserID: 1003}
		for _, c := range choices {
			v.Departments = append(v.Departments, Assignment{DepartmentID: c.DepartmentID, Name: "D", States: c.States})
		}
		return v
	}
	cases := []struct {
		name     string
		inserted bool
		before   []Choice
		after    Volunteer
		want     []string
	}{
		{"a new record is submitted, assigned or not", true, nil, after(choice(10, "assignment")),
			[]string{authapi.EventVolunteerSubmitted}},
		{"a department gaining the assignment state is assigned", false, []Choice{choice(10, "interest")}, after(choice(10, "interest", "assignment")),
			[]string{authapi.EventVolunteerAssigned}},
		{"a new department chosen as assigned is assigned", false, nil, after(choice(11, "assignment")),
			[]string{authapi.EventVolunteerAssigned}},
		{"a department losing it is unassigned", false, []Choice{choice(10, "assignment")}, after(choice(10, "experience")),
			[]string{authapi.EventVolunteerUnassigned}},
		{"a department dropped while assigned is unassigned", false, []Choice{choice(10, "assignment"), choice(11, "interest")}, after(choice(11, "interest")),
			[]string{authapi.EventVolunteerUnassigned}},
		{"moving from one department to another is both, unassigned first", false, []Choice{choice(10, "assignment")}, after(choice(10, "interest"), choice(11, "assignment")),
			[]string{authapi.EventVolunteerUnassigned, authapi.EventVolunteerAssigned}},
		{"another change is updated", false, []Choice{choice(10, "assignment")}, after(choice(10, "assignment", "experience"), choice(12, "avoid")),
			[]string{authapi.EventVolunteerUpdated}},
		{"a change outside the departments is updated", false, []Choice{choice(10, "interest")}, after(choice(10, "interest")),
			[]string{authapi.EventVolunteerUpdated}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			events := ChangeEvents(tc.inserted, tc.before, tc.after)
			var got []string
			for _, e := range events {
				got = append(got, e.Type)
				if e.Resource != "volunteer:2026:1003" {
					t.Fatalf("resource %q", e.Resource)
				}
				if p, ok := e.Payload.(Volunteer); !ok || p.UserID != 1003 {
					t.Fatalf("payload %#v", e.Payload)
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
	t.Run("deleted carries the last state", func(t *testing.T) {
		e := DeletedEvent(after(choice(10, "assignment")))
		if e.Type != authapi.EventVolunteerDeleted || e.Resource != "volunteer:2026:1003" {
			t.Fatalf("%+v", e)
		}
	})
}
