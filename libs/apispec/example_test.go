package apispec_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/gin-gonic/gin"

	"github.com/eventreg/eventreg/libs/apispec"
)

// A service mounts the document; a test checks a response against it.
func Example() {
	gin.SetMode(gin.TestMode)
	router := gin.New()
	router.GET("/api/docs", apispec.Handler())

	v, err := apispec.NewValidator()
	if err != nil {
		panic(err)
	}

	req := httptest.NewRequest(http.MethodGet, "/api/docs?format=yaml", nil)
	rec := httptest.NewRecorder()
	router.ServeHTTP(rec, req)
	fmt.Println(rec.Code, rec.Header().Get("Content-Type"), v.ValidateResponse(req, rec.Code, rec.Header(), rec.Body.Bytes()))

	// A page whose data is null breaks the contract.
	req = httptest.NewRequest(http.MethodPost, "/api/v0/registration/search", nil)
	header := http.Header{"Content-Type": {"application/json"}}
	err = v.ValidateResponse(req, http.StatusOK, header, []byte(`{"data":null,"nextPage":null,"hasMore":false}`))
	fmt.Println(err != nil)
	// Output:
	// 200 application/yaml; charset=utf-8 <nil>
	// true
}
