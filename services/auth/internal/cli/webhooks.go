package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/cobra"

	"github.com/eventreg/eventreg/libs/service"

	"github.com/eventreg/eventreg/services/auth/internal/client/clientdb"
	"github.com/eventreg/eventreg/services/auth/internal/config"
	"github.com/eventreg/eventreg/services/auth/internal/webhook"
	"github.com/eventreg/eventreg/services/auth/internal/webhook/webhookdb"
)

// webhooksConfig is what the webhooks commands need: the database, and the
// allowed networks that subscriptions' URLs are checked against.
type webhooksConfig struct {
	service.DatabaseConfig
	AllowedNetworks []string `env:"WEBHOOK_ALLOWED_NETWORKS" envSeparator:","`
}

func (w *webhooksConfig) Validate() error {
	_, err := (&config.Webhooks{AllowedNetworks: w.AllowedNetworks}).Networks()
	return err
}

// withWebhooks opens the database and runs fn with the webhook business.
func withWebhooks(ctx context.Context, fn func(*webhook.Service) error) error {
	return service.WithDatabase(ctx, func(cfg webhooksConfig, pool *pgxpool.Pool) error {
		networks, _ := (&config.Webhooks{AllowedNetworks: cfg.AllowedNetworks}).Networks()
		return fn(webhook.NewService(webhookdb.New(pool), clientdb.New(pool), webhook.NewPolicy(networks), nil))
	})
}

// subscriptionOut is a subscription as the commands print it.
type subscriptionOut struct {
	ID             string    `json:"id"`
	ClientID       int64     `json:"client_id"`
	URL            string    `json:"url"`
	Events         []string  `json:"events"`
	Description    string    `json:"description"`
	Format         string    `json:"format"`
	State          string    `json:"state"`
	DisabledReason string    `json:"disabled_reason,omitempty"`
	DisabledBy     string    `json:"disabled_by,omitempty"`
	FailingSince   time.Time `json:"failing_since,omitzero"`
	CreatedAt      time.Time `json:"created_at"`
	UpdatedAt      time.Time `json:"updated_at"`
}

func subscriptionJSON(s webhook.Subscription) subscriptionOut {
	return subscriptionOut{ID: s.ID, ClientID: s.ClientID, URL: s.URL, Events: s.Events, Description: s.Description, Format: string(s.Format), State: string(s.State),
		DisabledReason: s.DisabledReason, DisabledBy: string(s.DisabledBy), FailingSince: s.FailingSince.UTC(), CreatedAt: s.CreatedAt.UTC(), UpdatedAt: s.UpdatedAt.UTC()}
}

// deliveryOut is a delivery as the commands print it.
type deliveryOut struct {
	ID            string    `json:"id"`
	EventID       string    `json:"event_id"`
	Event         string    `json:"event"`
	State         string    `json:"state"`
	Attempts      int       `json:"attempts"`
	LastStatus    int       `json:"last_status,omitempty"`
	LastError     string    `json:"last_error,omitempty"`
	NextAttemptAt time.Time `json:"next_attempt_at,omitzero"`
	DeliveredAt   time.Time `json:"delivered_at,omitzero"`
	CreatedAt     time.Time `json:"created_at"`
}

func deliveryJSON(d webhook.Delivery) deliveryOut {
	return deliveryOut{ID: d.ID, EventID: d.EventID, Event: d.Event, State: string(d.State), Attempts: d.Attempts, LastStatus: d.LastStatus,
		LastError: d.LastError, NextAttemptAt: d.NextAttemptAt.UTC(), DeliveredAt: d.DeliveredAt.UTC(), CreatedAt: d.CreatedAt.UTC()}
}

// printJSONRows prints items as a JSON array of their rendering.
func printJSONRows[T, J any](w io.Writer, items []T, render func(T) J) error {
	rows := make([]J, len(items))
	for i, it := range items {
		rows[i] = render(it)
	}
	return service.PrintJSON(w, rows)
}

// webhookError turns the business's errors into the operator's messages.
func webhookError(id string, err error) error {
	switch {
	case errors.Is(err, webhook.ErrNotFound):
		return fmt.Errorf("webhook subscription %s not found", id)
	case errors.Is(err, webhook.ErrDeliveryNotFound):
		return fmt.Errorf("no such delivery of webhook subscription %s", id)
	case errors.Is(err, webhook.ErrAppNotFound):
		return errors.New("no client has this id")
	case errors.Is(err, webhook.ErrTooMany):
		return fmt.Errorf("the client holds %d webhook subscriptions already, the most allowed", webhook.MaxSubscriptions)
	}
	return err
}

func webhooksCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "webhooks", Short: "List and manage apps' webhook subscriptions and deliveries"}
	cmd.AddCommand(webhooksListCommand(), webhooksAddCommand(), webhooksRemoveCommand(),
		webhooksStateCommand("enable", webhook.StateActive), webhooksStateCommand("disable", webhook.StateDisabled),
		webhooksDeliveriesCommand(), webhooksReplayCommand(),
		webhooksPrivateCommand("allow-private", true), webhooksPrivateCommand("deny-private", false), webhooksPrivateAppsCommand())
	return cmd
}

// webhooksPrivateCommand is allow-private (allowed) or deny-private.
func webhooksPrivateCommand(use string, allowed bool) *cobra.Command {
	short := "Let a client's (app's) subscriptions reach targets inside WEBHOOK_ALLOWED_NETWORKS (an app running beside eventreg)"
	if !allowed {
		short = "No longer let a client's subscriptions reach targets inside WEBHOOK_ALLOWED_NETWORKS (refused from their next connection)"
	}
	cmd := &cobra.Command{Use: use, Short: short, Args: cobra.NoArgs}
	clientFlag := cmd.Flags().String("client", "", "the client (app) (required)")
	out := service.AddOutputFlag(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		id, err := parseID(*clientFlag)
		if err != nil {
			return err
		}
		return withWebhooks(cmd.Context(), func(s *webhook.Service) error {
			if err := s.AllowPrivate(cmd.Context(), id, allowed); err != nil {
				return webhookError("", err)
			}
			if out.JSON() {
				return service.PrintJSON(cmd.OutOrStdout(), map[string]any{"client_id": id, "private_targets": allowed})
			}
			if allowed {
				fmt.Fprintf(cmd.OutOrStdout(), "client %d may subscribe to targets inside WEBHOOK_ALLOWED_NETWORKS\n", id)
			} else {
				fmt.Fprintf(cmd.OutOrStdout(), "client %d reaches public addresses only\n", id)
			}
			return nil
		})
	}
	return cmd
}

func webhooksPrivateAppsCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "private-apps", Short: "List the clients allowed targets inside WEBHOOK_ALLOWED_NETWORKS", Args: cobra.NoArgs}
	out := service.AddOutputFlag(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		return withWebhooks(cmd.Context(), func(s *webhook.Service) error {
			ids, err := s.PrivateApps(cmd.Context())
			if err != nil {
				return err
			}
			if out.JSON() {
				return service.PrintJSON(cmd.OutOrStdout(), append([]int64{}, ids...))
			}
			for _, id := range ids {
				fmt.Fprintln(cmd.OutOrStdout(), id)
			}
			return nil
		})
	}
	return cmd
}

func webhooksListCommand() *cobra.Command {
	list := &cobra.Command{Use: "list", Short: "List webhook subscriptions (of one client with --client)", Args: cobra.NoArgs}
	clientFlag := list.Flags().String("client", "", "only this client's subscriptions")
	out := service.AddOutputFlag(list)
	list.RunE = func(cmd *cobra.Command, _ []string) error {
		var owner int64
		if *clientFlag != "" {
			id, err := parseID(*clientFlag)
			if err != nil {
				return err
			}
			owner = id
		}
		return withWebhooks(cmd.Context(), func(s *webhook.Service) error {
			subs, err := s.List(cmd.Context(), owner)
			if err != nil {
				return err
			}
			if out.JSON() {
				return printJSONRows(cmd.OutOrStdout(), subs, subscriptionJSON)
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tCLIENT\tSTATE\tFORMAT\tEVENTS\tURL")
			for _, sub := range subs {
				fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\n", sub.ID, sub.ClientID, sub.State, sub.Format, strings.Join(sub.Events, ","), sub.URL)
			}
			return tw.Flush()
		})
	}
	return list
}

func webhooksAddCommand() *cobra.Command {
	add := &cobra.Command{Use: "add", Short: "Subscribe a client to events at a URL", Args: cobra.NoArgs}
	clientFlag := add.Flags().String("client", "", "the client (app) to subscribe (required)")
	urlFlag := add.Flags().String("url", "", "where to POST the events (required)")
	events := add.Flags().String("events", "", `event types, comma-separated, e.g. "volunteer-updated,user-updated" (required)`)
	desc := add.Flags().String("description", "", "a note on the subscription")
	format := add.Flags().String("format", string(webhook.FormatEventreg), `the shape of the delivery tokens: "eventreg" (aud the client id) or "concat" (the real API's: aud the URL, 120 s)`)
	out := service.AddOutputFlag(add)
	add.RunE = func(cmd *cobra.Command, _ []string) error {
		owner, err := parseID(*clientFlag)
		if err != nil {
			return err
		}
		var list []string
		for _, e := range strings.Split(*events, ",") {
			if e = strings.TrimSpace(e); e != "" {
				list = append(list, e)
			}
		}
		return withWebhooks(cmd.Context(), func(s *webhook.Service) error {
			sub, err := s.Create(cmd.Context(), owner, webhook.NewSubscription{URL: *urlFlag, Events: list, Description: *desc,
				Format: webhook.Format(*format)})
			if err != nil {
				return webhookError("", err)
			}
			return printSubscription(cmd, *out, sub)
		})
	}
	return add
}

func printSubscription(cmd *cobra.Command, out service.Output, s webhook.Subscription) error {
	if out.JSON() {
		return service.PrintJSON(cmd.OutOrStdout(), subscriptionJSON(s))
	}
	w := cmd.OutOrStdout()
	fmt.Fprintf(w, "id:          %s\nclient:      %d\nurl:         %s\nevents:      %s\nstate:       %s\n",
		s.ID, s.ClientID, s.URL, strings.Join(s.Events, ","), s.State)
	if s.DisabledReason != "" {
		fmt.Fprintf(w, "disabled:    %s\n", s.DisabledReason)
	}
	if !s.FailingSince.IsZero() {
		fmt.Fprintf(w, "failing since: %s\n", s.FailingSince.UTC().Format(time.RFC3339))
	}
	return nil
}

func webhooksRemoveCommand() *cobra.Command {
	rm := &cobra.Command{Use: "remove ID", Short: "Delete a webhook subscription with its deliveries", Args: cobra.ExactArgs(1)}
	out := service.AddOutputFlag(rm)
	rm.RunE = func(cmd *cobra.Command, args []string) error {
		return withWebhooks(cmd.Context(), func(s *webhook.Service) error {
			if err := s.Delete(cmd.Context(), webhook.Operator, args[0]); err != nil {
				return webhookError(args[0], err)
			}
			if out.JSON() {
				return service.PrintJSON(cmd.OutOrStdout(), map[string]any{"id": args[0], "deleted": true})
			}
			fmt.Fprintf(cmd.OutOrStdout(), "webhook subscription %s deleted\n", args[0])
			return nil
		})
	}
	return rm
}

// webhooksStateCommand is enable (to active) or disable (to disabled).
func webhooksStateCommand(use string, to webhook.State) *cobra.Command {
	short := "Resume a disabled webhook subscription (whoever disabled it): its pending deliveries are due at once"
	if to == webhook.StateDisabled {
		short = "Pause a webhook subscription until an operator enables it (its app cannot): its deliveries wait"
	}
	cmd := &cobra.Command{Use: use + " ID", Short: short, Args: cobra.ExactArgs(1)}
	out := service.AddOutputFlag(cmd)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		return withWebhooks(cmd.Context(), func(s *webhook.Service) error {
			sub, err := s.Update(cmd.Context(), webhook.Operator, args[0], webhook.Change{State: &to})
			if err != nil {
				return webhookError(args[0], err)
			}
			return printSubscription(cmd, *out, sub)
		})
	}
	return cmd
}

func webhooksDeliveriesCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "deliveries ID", Short: "List the deliveries of a webhook subscription, oldest first", Args: cobra.ExactArgs(1)}
	state := cmd.Flags().String("state", "", "only deliveries in this state: pending, delivered or dead")
	limit := cmd.Flags().Int("limit", 100, "the most deliveries to list")
	out := service.AddOutputFlag(cmd)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if *limit < 1 || *limit > 10_000 {
			return errors.New("--limit must be between 1 and 10000")
		}
		return withWebhooks(cmd.Context(), func(s *webhook.Service) error {
			ds, more, err := s.Deliveries(cmd.Context(), webhook.Operator, args[0], webhook.DeliveryState(*state), 0, *limit)
			if err != nil {
				return webhookError(args[0], err)
			}
			if out.JSON() {
				return printJSONRows(cmd.OutOrStdout(), ds, deliveryJSON)
			}
			printDeliveries(cmd.OutOrStdout(), ds)
			if more {
				fmt.Fprintf(cmd.ErrOrStderr(), "more deliveries follow; raise --limit to see them\n")
			}
			return nil
		})
	}
	return cmd
}

func printDeliveries(w io.Writer, ds []webhook.Delivery) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tEVENT\tSTATE\tATTEMPTS\tLAST STATUS\tLAST ERROR")
	for _, d := range ds {
		status := "-"
		if d.LastStatus != 0 {
			status = strconv.Itoa(d.LastStatus)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", d.ID, d.Event, d.State, d.Attempts, status, d.LastError)
	}
	_ = tw.Flush()
}

func webhooksReplayCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "replay ID", Short: "Send every dead delivery of a subscription again (or one with --delivery)", Args: cobra.ExactArgs(1)}
	delivery := cmd.Flags().String("delivery", "", "replay only this delivery (dead, delivered or pending)")
	out := service.AddOutputFlag(cmd)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		return withWebhooks(cmd.Context(), func(s *webhook.Service) error {
			if *delivery != "" {
				d, err := s.Replay(cmd.Context(), webhook.Operator, args[0], *delivery)
				if err != nil {
					return webhookError(args[0], err)
				}
				if out.JSON() {
					return service.PrintJSON(cmd.OutOrStdout(), deliveryJSON(d))
				}
				fmt.Fprintf(cmd.OutOrStdout(), "delivery %s is pending, due now\n", d.ID)
				return nil
			}
			n, err := s.ReplayDead(cmd.Context(), webhook.Operator, args[0])
			if err != nil {
				return webhookError(args[0], err)
			}
			if out.JSON() {
				return service.PrintJSON(cmd.OutOrStdout(), map[string]any{"id": args[0], "replayed": n})
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%d dead deliveries of %s are pending, due now\n", n, args[0])
			return nil
		})
	}
	return cmd
}
