package volunteerapi_test

import (
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/eventreg/eventreg/libs/resourcetest"
	"github.com/eventreg/eventreg/services/volunteers/internal/volunteer"
	"github.com/eventreg/eventreg/services/volunteers/internal/volunteer/volunteerdb"
	"github.com/eventreg/eventreg/services/volunteers/internal/volunteerapi"
)

// FuzzSearchBody sends arbitrary bodies to POST /api/v0/volunteers/search
// with the database offline (resourcetest.FuzzSearchBody).
func FuzzSearchBody(f *testing.F) {
	off := resourcetest.NewOffline(f)
	svc := volunteer.NewService(volunteerdb.New(off.Pool), off.Users(), "2026")
	h := volunteerapi.New(svc, off.Paginator("volunteers.search"), off.Log, func(string) []gin.HandlerFunc { return nil })
	// Volunteers takes no filter: its bodies are ignored, not refused.
	resourcetest.FuzzSearchBody(f, resourcetest.Router(h.Register), "/api/v0/volunteers/search", resourcetest.UserIDsSearchSeeds, false)
}
