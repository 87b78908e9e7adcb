// Package httpserver runs a service's three HTTP listeners: the public API,
// the internal one (service-to-service endpoints) and the ops one (/healthz,
// /readyz, /metrics, profiles: what probes and Prometheus reach), with
// timeouts, a body size limit, tracing, request logs, RED metrics, errors in
// the API's shape and graceful shutdown.
package httpserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/http/pprof"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"golang.org/x/sync/errgroup"

	"github.com/eventreg/eventreg/libs/apierror"
	"github.com/eventreg/eventreg/libs/apireply"
)

// Check is a readiness probe of one dependency.
type Check func(ctx context.Context) error

// Server owns the public, internal and ops gin engines of one service.
type Server struct {
	// Public serves the API routed by the gateway.
	Public *gin.Engine
	// Internal serves the service-to-service endpoints (which the service
	// guards with servicetoken's middleware).
	Internal *gin.Engine
	// Ops serves /healthz, /readyz, /metrics and the profiles: nothing a
	// caller could change or read people's data with, so that probes and
	// Prometheus need no credentials and reach no API.
	Ops *gin.Engine
	// Metrics is the registry exposed on /metrics; services add their counters.
	Metrics *prometheus.Registry

	cfg      Config
	log      *slog.Logger
	service  string
	checksMu sync.Mutex
	checks   map[string]Check
	draining atomic.Bool
	// noDeadline holds the route templates out of RequestTimeout
	// (copy on write: read by every request).
	noDeadline atomic.Pointer[map[string]bool]

	publicLn, internalLn, opsLn net.Listener
}

// New builds a server for the named service. Routes are added to Public and
// Internal before Run.
func New(cfg Config, log *slog.Logger, service string) *Server {
	gin.SetMode(gin.ReleaseMode)
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = DefaultRequestTimeout
	}
	s := &Server{cfg: cfg, log: log, service: service, checks: map[string]Check{}, Metrics: prometheus.NewRegistry()}
	s.noDeadline.Store(&map[string]bool{})
	s.Metrics.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	red := newREDMetrics(s.Metrics)

	s.Public = s.newEngine(red, "public")
	s.Internal = s.newEngine(red, "internal")
	s.Ops = s.newEngine(red, "ops")

	s.Ops.GET("/healthz", func(c *gin.Context) { c.JSON(http.StatusOK, gin.H{"status": "ok"}) })
	s.Ops.GET("/readyz", s.readyz)
	s.Ops.GET("/metrics", gin.WrapH(promhttp.HandlerFor(s.Metrics, promhttp.HandlerOpts{Registry: s.Metrics})))
	if cfg.Pprof {
		s.Ops.Any(pprofRoute, gin.WrapF(servePprof))
		// A CPU profile or trace runs for the seconds it is asked for
		// (bounded by HTTP_WRITE_TIMEOUT); a request deadline would cut it
		// short.
		s.ExemptFromRequestTimeout(pprofRoute)
	}
	return s
}

const pprofRoute = "/debug/pprof/*profile"

// ExemptFromRequestTimeout takes the routes of the given templates, as
// registered (e.g. "/api/v0/users/:id/volunteer"), on either listener, out of
// RequestTimeout: routes that bound their own work, with a longer bound.
// Call it before Serve.
func (s *Server) ExemptFromRequestTimeout(routes ...string) {
	next := maps.Clone(*s.noDeadline.Load())
	for _, r := range routes {
		next[r] = true
	}
	s.noDeadline.Store(&next)
}

func (s *Server) exemptFromDeadline(route string) bool {
	return route != "" && (*s.noDeadline.Load())[route]
}

func (s *Server) newEngine(red *redMetrics, listener string) *gin.Engine {
	e := gin.New()
	e.HandleMethodNotAllowed = true
	e.RedirectTrailingSlash = false
	e.RedirectFixedPath = false
	e.ContextWithFallback = true
	// c.ClientIP() is the peer, or what a trusted proxy says the client is.
	e.RemoteIPHeaders = []string{"X-Forwarded-For", "X-Real-IP"}
	if err := e.SetTrustedProxies(trimmed(s.cfg.TrustedProxies)); err != nil {
		s.log.Error("TRUSTED_PROXIES is invalid: trusting no proxy", "error", err.Error())
		_ = e.SetTrustedProxies(nil)
	}
	e.Use(
		oneForwardingHeader,
		s.traceContext(),
		s.recoverer(),
		requestLog(s.log, listener),
		red.middleware(listener),
		bodyLimit(s.cfg.BodyLimit),
		requestDeadline(s.cfg.RequestTimeout, s.exemptFromDeadline),
	)
	e.NoRoute(func(c *gin.Context) { apireply.Abort(c, apierror.NotFound("No such endpoint.")) })
	e.NoMethod(func(c *gin.Context) { apireply.Abort(c, apierror.MethodNotAllowed()) })
	return e
}

func trimmed(list []string) []string {
	out := make([]string, 0, len(list))
	for _, v := range list {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}

// servePprof serves net/http/pprof's index and profiles (PPROF_ENABLED).
func servePprof(w http.ResponseWriter, r *http.Request) {
	switch strings.TrimPrefix(r.URL.Path, "/debug/pprof/") {
	case "cmdline":
		pprof.Cmdline(w, r)
	case "profile":
		pprof.Profile(w, r)
	case "symbol":
		pprof.Symbol(w, r)
	case "trace":
		pprof.Trace(w, r)
	default:
		pprof.Index(w, r)
	}
}

// AddReadinessCheck registers a dependency that /readyz probes.
func (s *Server) AddReadinessCheck(name string, check Check) {
	s.checksMu.Lock()
	defer s.checksMu.Unlock()
	s.checks[name] = check
}

func (s *Server) readyz(c *gin.Context) {
	if s.draining.Load() {
		c.JSON(http.StatusServiceUnavailable, gin.H{"status": "draining"})
		return
	}
	s.checksMu.Lock()
	checks := make(map[string]Check, len(s.checks))
	for k, v := range s.checks {
		checks[k] = v
	}
	s.checksMu.Unlock()

	ctx, cancel := context.WithTimeout(c.Request.Context(), 2*time.Second)
	defer cancel()
	var mu sync.Mutex
	failed := map[string]string{}
	var wg sync.WaitGroup
	for name, check := range checks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := check(ctx); err != nil {
				mu.Lock()
				failed[name] = err.Error()
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(failed) > 0 {
		c.JSON(http.StatusServiceUnavailable, gin.H{"status": "unready", "failed": failed})
		return
	}
	c.JSON(http.StatusOK, gin.H{"status": "ready"})
}

// Listen binds the three listeners; use it before Serve (or Run) to learn
// the addresses of ":0" listeners (tests). Once bound, it does nothing more.
func (s *Server) Listen() error {
	if s.publicLn != nil {
		return nil
	}
	var err error
	if s.publicLn, err = net.Listen("tcp", s.cfg.PublicAddr); err != nil {
		return fmt.Errorf("listening on PUBLIC_ADDR %s: %w", s.cfg.PublicAddr, err)
	}
	if s.internalLn, err = net.Listen("tcp", s.cfg.InternalAddr); err != nil {
		s.publicLn.Close()
		return fmt.Errorf("listening on INTERNAL_ADDR %s: %w", s.cfg.InternalAddr, err)
	}
	if s.opsLn, err = net.Listen("tcp", s.cfg.OpsAddr); err != nil {
		s.publicLn.Close()
		s.internalLn.Close()
		return fmt.Errorf("listening on OPS_ADDR %s: %w", s.cfg.OpsAddr, err)
	}
	return nil
}

// PublicAddr is the bound public address (after Listen).
func (s *Server) PublicAddr() string { return s.publicLn.Addr().String() }

// InternalAddr is the bound internal address (after Listen).
func (s *Server) InternalAddr() string { return s.internalLn.Addr().String() }

// OpsAddr is the bound ops address (after Listen).
func (s *Server) OpsAddr() string { return s.opsLn.Addr().String() }

// Run listens and serves until ctx is cancelled, then shuts down gracefully.
func (s *Server) Run(ctx context.Context) error {
	if err := s.Listen(); err != nil {
		return err
	}
	return s.Serve(ctx)
}

// Serve serves on the bound listeners until ctx is cancelled; then /readyz
// fails for ShutdownDelay, the listeners close and in-flight requests get up
// to ShutdownTimeout to finish.
func (s *Server) Serve(ctx context.Context) error {
	servers := []*http.Server{s.httpServer(s.Public), s.httpServer(s.Internal), s.httpServer(s.Ops)}
	listeners := []net.Listener{s.publicLn, s.internalLn, s.opsLn}
	g, gctx := errgroup.WithContext(ctx)
	for i := range servers {
		srv, ln := servers[i], listeners[i]
		g.Go(func() error {
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				return fmt.Errorf("serving %s: %w", ln.Addr(), err)
			}
			return nil
		})
	}
	g.Go(func() error {
		<-gctx.Done()
		s.draining.Store(true)
		if ctx.Err() != nil && s.cfg.ShutdownDelay > 0 {
			s.log.Info("draining before shutdown", "delay", s.cfg.ShutdownDelay.String())
			time.Sleep(s.cfg.ShutdownDelay)
		}
		sctx, cancel := context.WithTimeout(context.Background(), s.cfg.ShutdownTimeout)
		defer cancel()
		var errs []error
		for _, srv := range servers {
			if err := srv.Shutdown(sctx); err != nil {
				errs = append(errs, fmt.Errorf("shutting down %s: %w", srv.Addr, err))
			}
		}
		return errors.Join(errs...)
	})
	s.log.Info("listening", "public", s.publicLn.Addr().String(), "internal", s.internalLn.Addr().String(), "ops", s.opsLn.Addr().String())
	err := g.Wait()
	s.log.Info("stopped")
	return err
}

func (s *Server) httpServer(h http.Handler) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: s.cfg.ReadHeaderTimeout,
		ReadTimeout:       s.cfg.ReadTimeout,
		WriteTimeout:      s.cfg.WriteTimeout,
		IdleTimeout:       s.cfg.IdleTimeout,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
}
