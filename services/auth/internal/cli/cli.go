// Package cli is the command tree of the auth binary: serve, migrate, import, clients, keys and webhooks.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/cobra"

	"github.com/eventreg/eventreg/libs/fixture"
	"github.com/eventreg/eventreg/libs/redisdb"
	"github.com/eventreg/eventreg/libs/service"

	"github.com/eventreg/eventreg/services/auth/internal/client"
	"github.com/eventreg/eventreg/services/auth/internal/client/clientdb"
	"github.com/eventreg/eventreg/services/auth/internal/clientsecret"
	"github.com/eventreg/eventreg/services/auth/internal/config"
	"github.com/eventreg/eventreg/services/auth/internal/grant/refreshdb"
	"github.com/eventreg/eventreg/services/auth/internal/server"
	"github.com/eventreg/eventreg/services/auth/internal/signing"
	"github.com/eventreg/eventreg/services/auth/internal/signing/keydb"
	"github.com/eventreg/eventreg/services/auth/internal/webhook"
	"github.com/eventreg/eventreg/services/auth/internal/webhook/webhookdb"
	"github.com/eventreg/eventreg/services/auth/migrations"
)

// Root returns the `auth` command.
func Root() *cobra.Command {
	root := service.NewRoot("auth", "OAuth 2.0 authorization server of the event registration service")
	root.AddCommand(
		service.ServeCommand("auth", migrations.Set(), func(ctx context.Context, cfg config.Serve, rt *service.Runtime) error {
			_, err := server.Mount(ctx, cfg, rt)
			return err
		}),
		service.MigrateCommand(migrations.Set(), config.Load[service.DatabaseConfig]),
		service.HealthcheckCommand(),
		importCommand(),
		clientsCommand(),
		keysCommand(),
		webhooksCommand(),
	)
	return root
}

// clientConfig is what the import and clients commands need. Redis is
// where a deleted, rotated or narrowed client's access tokens are revoked
// (the revocation feed): delete and rotate-secret need it, import only when
// it narrows a client. The token lifetime and client cache must be serve's.
type clientConfig struct {
	service.DatabaseConfig
	ClientSecretKey string        `env:"CLIENT_SECRET_KEY,required,unset"`
	RedisURL        string        `env:"REDIS_URL,unset"`
	RedisCluster    bool          `env:"REDIS_CLUSTER"`
	AccessTokenTTL  time.Duration `env:"ACCESS_TOKEN_TTL" envDefault:"1h"`
	ClientCacheTTL  time.Duration `env:"CLIENT_CACHE_TTL" envDefault:"5s"`
}

func (c *clientConfig) Validate() error {
	if len(c.ClientSecretKey) < config.MinClientSecretKeyLength {
		return fmt.Errorf("CLIENT_SECRET_KEY must be at least %d characters long", config.MinClientSecretKeyLength)
	}
	return nil
}

// withClients opens the database (and Redis, when REDIS_URL is set) and
// runs fn with the client business.
func withClients(ctx context.Context, fn func(*client.Service) error) error {
	return service.WithDatabase(ctx, func(cfg clientConfig, pool *pgxpool.Pool) error {
		s := client.NewService(clientdb.New(pool), clientsecret.NewHasher([]byte(cfg.ClientSecretKey)), 0)
		if cfg.RedisURL != "" {
			rdb, err := redisdb.Open(cfg.RedisURL, cfg.RedisCluster)
			if err != nil {
				return err
			}
			defer rdb.Close()
			s.SetTokenRevoker(refreshdb.ClientTokens{Denylist: refreshdb.NewDenylist(rdb, cfg.AccessTokenTTL), Grace: cfg.ClientCacheTTL + time.Second})
		}
		return fn(s)
	})
}

func importCommand() *cobra.Command {
	return &cobra.Command{
		Use: "import FILE", Short: "Load the clients section of a fixture file (idempotent, all or nothing)", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			doc, err := fixture.Load(args[0])
			if err != nil {
				return err
			}
			return service.WithDatabase(cmd.Context(), func(cfg clientConfig, pool *pgxpool.Pool) error {
				s := client.NewService(clientdb.New(pool), clientsecret.NewHasher([]byte(cfg.ClientSecretKey)), 0)
				res, err := s.Import(cmd.Context(), doc.Clients)
				if err != nil {
					return err
				}
				// Then which apps' webhooks may reach private targets (the
				// clients exist now); absent in the file: unchanged.
				hooks := webhook.NewService(webhookdb.New(pool), clientdb.New(pool), webhook.NewPolicy(nil), nil)
				private, err := hooks.ImportPrivateTargets(cmd.Context(), doc.Clients)
				if err != nil {
					return fmt.Errorf("clients imported, but not their webhook private targets: %w", err)
				}
				out := cmd.OutOrStdout()
				fmt.Fprintf(out, "clients: %d in file, %d created, %d updated, %d unchanged\n", len(doc.Clients), res.Created, res.Updated,
					len(doc.Clients)-res.Created-res.Updated)
				ids := make([]int64, 0, len(res.Generated))
				for id := range res.Generated {
					ids = append(ids, id)
				}
				sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
				for _, id := range ids {
					fmt.Fprintf(out, "client %d: generated secret %s (shown once; store it now)\n", id, res.Generated[id])
				}
				for _, id := range res.Revoked {
					fmt.Fprintf(out, "client %d: lost a scope, its kind or its secret; its access tokens are revoked\n", id)
				}
				if len(private) > 0 {
					fmt.Fprintf(out, "clients: webhook private targets set for %d\n", len(private))
				}
				return nil
			})
		},
	}
}

type clientJSON struct {
	ClientID     int64    `json:"client_id"`
	Name         string   `json:"name"`
	Description  string   `json:"description"`
	Kind         string   `json:"kind"`
	Scopes       []string `json:"scopes"`
	RedirectURIs []string `json:"redirect_uris"`
	RequirePKCE  bool     `json:"require_pkce"`
	IDTokenAlg   string   `json:"id_token_signed_response_alg"`
	// PostLogoutRedirectURIs of RP-initiated logout.
	PostLogoutRedirectURIs []string  `json:"post_logout_redirect_uris"`
	CreatedAt              time.Time `json:"created_at"`
	UpdatedAt              time.Time `json:"updated_at"`
}

func toJSON(c client.Client) clientJSON {
	return clientJSON{ClientID: c.ID, Name: c.Name, Description: c.Description, Kind: string(c.Kind),
		Scopes: append([]string{}, c.Scopes...), RedirectURIs: append([]string{}, c.RedirectURIs...), RequirePKCE: c.RequirePKCE, IDTokenAlg: c.IDTokenAlg,
		PostLogoutRedirectURIs: append([]string{}, c.PostLogoutRedirectURIs...), CreatedAt: c.CreatedAt.UTC(), UpdatedAt: c.UpdatedAt.UTC()}
}

type secretJSON struct {
	ClientID     int64  `json:"client_id"`
	ClientSecret string `json:"client_secret"`
}

func parseID(arg string) (int64, error) {
	id, ok := client.ParseID(arg)
	if !ok {
		return 0, fmt.Errorf("client id must be a positive number, got %q", arg)
	}
	return id, nil
}

func notFound(id int64, err error) error {
	if errors.Is(err, client.ErrNotFound) {
		return fmt.Errorf("client %d not found", id)
	}
	return err
}

// onClient is the RunE of a command on the client its ID argument names: it
// parses the id and runs fn with the clients service.
func onClient(fn func(cmd *cobra.Command, s *client.Service, id int64) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		id, err := parseID(args[0])
		if err != nil {
			return err
		}
		return withClients(cmd.Context(), func(s *client.Service) error { return fn(cmd, s, id) })
	}
}

// printSecret prints a secret shown once: JSON either way (the documented
// shape), with a reminder on stderr for people.
func printSecret(cmd *cobra.Command, id int64, secret string) error {
	fmt.Fprintln(cmd.ErrOrStderr(), "The client secret is shown once and stored only as a keyed hash; keep it now.")
	return service.PrintJSON(cmd.OutOrStdout(), secretJSON{ClientID: id, ClientSecret: secret})
}

func clientsCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "clients", Short: "Register and manage OAuth clients (apps)"}

	create := &cobra.Command{Use: "create", Short: "Register a client and print its id and secret (shown once)", Args: cobra.NoArgs}
	name := create.Flags().String("name", "", "the app's name, shown on the consent page (required)")
	desc := create.Flags().String("description", "", "what the app does, shown on the consent page")
	kind := create.Flags().String("kind", "", `"obo" (acts for users who consent) or "service" (client credentials) (required)`)
	scopes := create.Flags().String("scopes", "", `approved scopes, space-separated, e.g. "user:read registration:read" (required)`)
	redirects := create.Flags().StringArray("redirect-uri", nil, "a redirect URI of an obo app (repeat for several)")
	allowNoPKCE := create.Flags().Bool("allow-no-pkce", false,
		"let an obo app sign users in without PKCE (weaker: only for a confidential app that cannot send a code_challenge)")
	idTokenAlg := create.Flags().String("id-token-alg", client.DefaultIDTokenAlg,
		"the algorithm of the app's OpenID Connect ID tokens: RS256 or ES256 (its id_token_signed_response_alg)")
	postLogout := create.Flags().StringArray("post-logout-redirect-uri", nil,
		"where the app may send the browser back after OpenID Connect RP-initiated logout (repeat for several)")
	service.AddOutputFlag(create) // the id and secret print as JSON either way
	create.RunE = func(cmd *cobra.Command, _ []string) error {
		if *allowNoPKCE && client.Kind(*kind) != client.KindOBO {
			return errors.New("--allow-no-pkce applies to obo clients only")
		}
		return withClients(cmd.Context(), func(s *client.Service) error {
			c, secret, err := s.Create(cmd.Context(), client.NewClient{Name: *name, Description: *desc, Kind: client.Kind(*kind),
				Scopes: strings.Fields(*scopes), RedirectURIs: *redirects, RequirePKCE: !*allowNoPKCE, IDTokenAlg: *idTokenAlg,
				PostLogoutRedirectURIs: *postLogout})
			if err != nil {
				return err
			}
			return printSecret(cmd, c.ID, secret)
		})
	}

	list := &cobra.Command{Use: "list", Short: "List clients", Args: cobra.NoArgs}
	listOut := service.AddOutputFlag(list)
	list.RunE = func(cmd *cobra.Command, _ []string) error {
		return withClients(cmd.Context(), func(s *client.Service) error {
			cs, err := s.List(cmd.Context())
			if err != nil {
				return err
			}
			if listOut.JSON() {
				out := make([]clientJSON, 0, len(cs))
				for _, c := range cs {
					out = append(out, toJSON(c))
				}
				return service.PrintJSON(cmd.OutOrStdout(), out)
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tKIND\tNAME\tSCOPES")
			for _, c := range cs {
				fmt.Fprintf(tw, "%d\t%s\t%s\t%s\n", c.ID, c.Kind, c.Name, c.Scopes.String())
			}
			return tw.Flush()
		})
	}

	get := &cobra.Command{Use: "get ID", Short: "Show one client", Args: cobra.ExactArgs(1)}
	getOut := service.AddOutputFlag(get)
	get.RunE = onClient(func(cmd *cobra.Command, s *client.Service, id int64) error {
		c, err := s.Get(cmd.Context(), id)
		if err != nil {
			return notFound(id, err)
		}
		if getOut.JSON() {
			return service.PrintJSON(cmd.OutOrStdout(), toJSON(c))
		}
		printClient(cmd.OutOrStdout(), c)
		return nil
	})

	rotate := &cobra.Command{Use: "rotate-secret ID", Short: "Replace a client's secret and print the new one (shown once); the access tokens it holds are revoked", Args: cobra.ExactArgs(1)}
	service.AddOutputFlag(rotate) // the secret prints as JSON either way
	rotate.RunE = onClient(func(cmd *cobra.Command, s *client.Service, id int64) error {
		secret, err := s.RotateSecret(cmd.Context(), id)
		if err != nil {
			return notFound(id, err)
		}
		return printSecret(cmd, id, secret)
	})

	del := &cobra.Command{Use: "delete ID", Short: "Delete a client (its consents go with it; its access tokens are revoked, its refresh tokens stop working)", Args: cobra.ExactArgs(1)}
	delOut := service.AddOutputFlag(del)
	del.RunE = onClient(func(cmd *cobra.Command, s *client.Service, id int64) error {
		if err := s.Delete(cmd.Context(), id); err != nil {
			return notFound(id, err)
		}
		if delOut.JSON() {
			return service.PrintJSON(cmd.OutOrStdout(), map[string]any{"client_id": id, "deleted": true})
		}
		fmt.Fprintf(cmd.OutOrStdout(), "client %d deleted\n", id)
		return nil
	})
	cmd.AddCommand(create, list, get, rotate, del)
	return cmd
}

func printClient(w io.Writer, c client.Client) {
	fmt.Fprintf(w, "id:            %d\nname:          %s\ndescription:   %s\nkind:          %s\nscopes:        %s\nredirect URIs: %s\nrequire PKCE:  %v\nID token alg:  %s\ncreated:       %s\nupdated:       %s\n",
		c.ID, c.Name, c.Description, c.Kind, c.Scopes.String(), strings.Join(c.RedirectURIs, " "), c.RequirePKCE, c.IDTokenAlg,
		c.CreatedAt.UTC().Format(time.RFC3339), c.UpdatedAt.UTC().Format(time.RFC3339))
}

// keysConfig is what the keys commands need.
type keysConfig struct {
	service.DatabaseConfig
	config.Keys
}

func (k *keysConfig) Validate() error { return k.Keys.Validate() }

func withKeys(ctx context.Context, fn func(*signing.Manager, *keydb.Store, keysConfig) error) error {
	return service.WithDatabase(ctx, func(cfg keysConfig, pool *pgxpool.Pool) error { return withManager(pool, cfg, fn) })
}

func withManager(pool *pgxpool.Pool, cfg keysConfig, fn func(*signing.Manager, *keydb.Store, keysConfig) error) error {
	store := keydb.New(pool)
	m := signing.NewManager(store, cfg.KEK(), signing.Config{RotationPeriod: cfg.KeyRotationPeriod, ActivationDelay: cfg.KeyActivationDelay,
		RefreshInterval: cfg.KeyRefreshInterval, MaxTokenTTL: cfg.AccessTokenTTL}, nil)
	return fn(m, store, cfg)
}

func keysCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "keys", Short: "Show, rotate and revoke the signing keys (ES256 and RS256)"}
	list := &cobra.Command{Use: "list", Short: "List signing keys and their states", Args: cobra.NoArgs}
	listOut := service.AddOutputFlag(list)
	list.RunE = func(cmd *cobra.Command, _ []string) error {
		return withKeys(cmd.Context(), func(_ *signing.Manager, store *keydb.Store, cfg keysConfig) error {
			keys, err := store.List(cmd.Context())
			if err != nil {
				return err
			}
			st := signing.Describe(keys, time.Now(), cfg.AccessTokenTTL)
			if listOut.JSON() {
				if st == nil {
					st = []signing.Status{}
				}
				return service.PrintJSON(cmd.OutOrStdout(), st)
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "KID\tALG\tSTATE\tCREATED\tSIGNS FROM\tUNPUBLISHED AT")
			for _, s := range st {
				unpub := "-"
				if !s.UnpublishAt.IsZero() {
					unpub = s.UnpublishAt.UTC().Format(time.RFC3339)
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", s.KID, s.Alg, s.State, s.CreatedAt.UTC().Format(time.RFC3339),
					s.ActivatesAt.UTC().Format(time.RFC3339), unpub)
			}
			return tw.Flush()
		})
	}
	rotate := &cobra.Command{Use: "rotate", Short: "Make a new signing key: published at once, signing after KEY_ACTIVATION_DELAY", Args: cobra.NoArgs}
	rotateOut := service.AddOutputFlag(rotate)
	alg := rotate.Flags().String("alg", signing.AlgES256, "the algorithm of the new key: ES256 (access tokens, webhooks, ID tokens of ES256 clients) or RS256 (ID tokens)")
	rotate.RunE = func(cmd *cobra.Command, _ []string) error {
		return withKeys(cmd.Context(), func(m *signing.Manager, _ *keydb.Store, _ keysConfig) error {
			k, err := m.RotateAlg(cmd.Context(), *alg)
			if err != nil {
				return err
			}
			if rotateOut.JSON() {
				return service.PrintJSON(cmd.OutOrStdout(), map[string]any{"kid": k.KID, "alg": k.Alg, "activatesAt": k.ActivatesAt.UTC()})
			}
			fmt.Fprintf(cmd.OutOrStdout(), "new key %s published; it signs from %s\n", k.KID, k.ActivatesAt.UTC().Format(time.RFC3339))
			return nil
		})
	}
	cmd.AddCommand(list, rotate, revokeKeyCommand())
	return cmd
}

type keyJSON struct {
	KID         string    `json:"kid"`
	Alg         string    `json:"alg"`
	ActivatesAt time.Time `json:"activatesAt"`
}

type revocationJSON struct {
	KID       string    `json:"kid"`
	RevokedAt time.Time `json:"revokedAt"`
	// Replacement is the key made to sign instead, when the revoked one signed.
	Replacement *keyJSON `json:"replacement,omitempty"`
}

func revokeKeyCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "revoke KID", Args: cobra.ExactArgs(1),
		Short: "Revoke a signing key at once (it leaked): never published nor signing again; a new key signs in its place if it was signing",
		Long: "Revoke a signing key at once (it leaked): never published nor signing again; a new key signs in its place if it was signing.\n" +
			"A kid may start with '-': put it after '--', as in `auth keys revoke -o json -- -AbC...`."}
	out := service.AddOutputFlag(cmd)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		return withKeys(cmd.Context(), func(m *signing.Manager, _ *keydb.Store, cfg keysConfig) error {
			kid := args[0]
			rev, err := m.Revoke(cmd.Context(), kid)
			switch {
			case errors.Is(err, signing.ErrUnknownKey):
				return fmt.Errorf("no signing key has kid %q (see `auth keys list`)", kid)
			case errors.Is(err, signing.ErrAlreadyRevoked):
				return fmt.Errorf("signing key %s is already revoked", kid)
			case err != nil:
				return fmt.Errorf("revoking signing key %s: %w", kid, err)
			}
			res := revocationJSON{KID: rev.KID, RevokedAt: rev.RevokedAt.UTC()}
			if k := rev.Replacement; k != nil {
				res.Replacement = &keyJSON{KID: k.KID, Alg: k.Alg, ActivatesAt: k.ActivatesAt.UTC()}
			}
			if out.JSON() {
				return service.PrintJSON(cmd.OutOrStdout(), res)
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "key %s revoked; every auth replica stops publishing it and signing with it within KEY_REFRESH_INTERVAL (%s)\n", kid, cfg.KeyRefreshInterval)
			if res.Replacement != nil {
				fmt.Fprintf(w, "new key %s signs in its place at once\n", res.Replacement.KID)
			}
			fmt.Fprintln(w, "resource services refuse the tokens it signed once they re-read the JWKS (JWKS_REFRESH_INTERVAL, 5m by default)")
			return nil
		})
	}
	return cmd
}
