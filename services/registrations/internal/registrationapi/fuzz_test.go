package registrationapi_test

import (
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/eventreg/eventreg/libs/page"
	"github.com/eventreg/eventreg/libs/resourcetest"
	"github.com/eventreg/eventreg/libs/usersclient"
	"github.com/eventreg/eventreg/services/registrations/internal/registration"
	"github.com/eventreg/eventreg/services/registrations/internal/registration/registrationdb"
	"github.com/eventreg/eventreg/services/registrations/internal/registrationapi"
)

// FuzzSearchBody sends arbitrary bodies to POST /api/v0/registration/search
// with the database offline (resourcetest.FuzzSearchBody); an empty userIds
// filter is the one body answered without the store: an empty page
// (decision 0041).
func FuzzSearchBody(f *testing.F) {
	off := resourcetest.NewOffline(f)
	svc := registration.NewService(registrationdb.New(off.Pool), usersclient.NewClient("http://127.0.0.1:1", 0, nil), "2026")
	h := registrationapi.New(svc, page.Paginator{Codec: off.Cursor, Query: "registrations.search"}, off.Log, noChains{})
	gin.SetMode(gin.TestMode)
	r := gin.New()
	h.Register(r, nil)
	seeds := append([]string{`{"filter": {"userIds": ["1003", 1001]}}`, `{"filter": {"userIds": "1' OR '1'='1"}}`,
		`{"filter": {"userIds": [1.5]}}`, "{\"filter\": {\"userIds\": [\"\xff\"]}}"}, resourcetest.CommonSearchSeeds...)
	resourcetest.FuzzSearchBody(f, r, "/api/v0/registration/search", seeds, true)
}

// noChains builds no middleware: the fuzzed handler is called without a token.
type noChains struct{}

func (noChains) ProtectedAndLimited(string) []gin.HandlerFunc                       { return nil }
func (noChains) ProtectedOrSelfAndLimited(string, string, string) []gin.HandlerFunc { return nil }
