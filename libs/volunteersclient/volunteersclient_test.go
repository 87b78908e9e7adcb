package volunteersclient_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/eventreg/eventreg/libs/svcclient"
	"github.com/eventreg/eventreg/libs/volunteersclient"
)

func TestStatus(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/internal/users/1003/volunteer-status" {
			w.WriteHeader(404)
			return
		}
		w.Write([]byte(`{"isVolunteer":true,"isDepartmentLead":true}`))
	}))
	defer srv.Close()
	st, err := volunteersclient.NewClient(srv.URL, time.Second, nil).Status(context.Background(), 1003)
	if err != nil || !st.IsVolunteer || !st.IsDepartmentLead {
		t.Fatalf("%+v %v", st, err)
	}
	_, err = volunteersclient.NewClient("http://127.0.0.1:1", time.Second, nil).Status(context.Background(), 1003)
	if !errors.Is(err, svcclient.ErrUnavailable) {
		t.Fatalf("down: %v", err)
	}
}
