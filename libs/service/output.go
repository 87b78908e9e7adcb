package service

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"
)

// Output is the value of the -o flag of a command that prints a result:
// text (the default) or json.
type Output string

// The formats -o accepts.
const (
	OutputText Output = "text"
	OutputJSON Output = "json"
)

// AddOutputFlag adds -o/--output to cmd. Any format but text and json is
// refused as the flags are parsed, before the command does anything.
func AddOutputFlag(cmd *cobra.Command) *Output {
	o := OutputText
	cmd.Flags().VarP(&o, "output", "o", `output format: "text" or "json"`)
	return &o
}

// String implements pflag.Value.
func (o *Output) String() string { return string(*o) }

// Type implements pflag.Value (the name shown in the usage).
func (o *Output) Type() string { return "format" }

// Set implements pflag.Value.
func (o *Output) Set(s string) error {
	switch f := Output(s); f {
	case OutputText, OutputJSON:
		*o = f
		return nil
	}
	return fmt.Errorf(`must be "text" or "json"`)
}

// JSON tells whether the result is printed as JSON.
func (o Output) JSON() bool { return o == OutputJSON }

// Print writes v as indented JSON with -o json, else the text and a newline.
func (o Output) Print(w io.Writer, v any, text string) error {
	if o.JSON() {
		return PrintJSON(w, v)
	}
	_, err := fmt.Fprintln(w, text)
	return err
}
