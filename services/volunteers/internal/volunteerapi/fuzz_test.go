package volunteerapi_test

import (
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/eventreg/eventreg/libs/page"
	"github.com/eventreg/eventreg/libs/resourcetest"
	"github.com/eventreg/eventreg/libs/usersclient"
	"github.com/eventreg/eventreg/services/volunteers/internal/volunteer"
	"github.com/eventreg/eventreg/services/volunteers/internal/volunteer/volunteerdb"
	"github.com/eventreg/eventreg/services/volunteers/internal/volunteerapi"
)

// FuzzSearchBody sends arbitrary bodies to POST /api/v0/volunteers/search
// with the database offline (resourcetest.FuzzSearchBody).
func FuzzSearchBody(f *testing.F) {
	off := resourcetest.NewOffline(f)
	svc := volunteer.NewService(volunteerdb.New(off.Pool), usersclient.NewClient("http://127.0.0.1:1", 0, nil), "2026")
	h := volunteerapi.New(svc, page.Paginator{Codec: off.Cursor, Query: "volunteers.search"}, off.Log, func(string) []gin.HandlerFunc { return nil })
	gin.SetMode(gin.TestMode)
	r := gin.New()
	h.Register(r, gin.New())
	seeds := append([]string{`{"filter": {"userIds": ["1003", 1001]}}`, `{"filter": {"userIds": "1' OR '1'='1"}}`,
		`{"filter": {"userIds": [1.5]}}`, "{\"filter\": {\"userIds\": [\"\xff\"]}}"}, resourcetest.CommonSearchSeeds...)
	resourcetest.FuzzSearchBody(f, r, "/api/v0/volunteers/search", seeds, false)
}
