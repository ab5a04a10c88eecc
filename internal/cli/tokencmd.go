package cli

import (
	"crypto/rand"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/tcpscope/tcpscope/internal/fault"
	"github.com/tcpscope/tcpscope/internal/token"
)

func newTokenCmd(stdout io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "token",
		Short: "Make keys, issue and check access tokens for a server run with --require-token",
		Long: `Access tokens admit tests to a server run with --require-token. A token is
a JSON Web Token signed with Ed25519 (as M-Lab's locate service signs the
access_token of ndt7) or with a shared HMAC secret, naming who tests
(subject), the servers it is for (audience) and when it expires.

  tcpscope token keygen --out /etc/tcpscope/token        # token.key, token.pub
  tcpscope server --require-token --token-key /etc/tcpscope/token.pub --token-audience ts1.example.net
  tcpscope token issue --key /etc/tcpscope/token.key --subject alice --audience ts1.example.net
  tcpscope test ts1.example.net --token eyJ...`,
		Args: noArgs("tcpscope token issue --key FILE --subject NAME"),
	}
	cmd.AddCommand(newTokenKeygenCmd(stdout), newTokenIssueCmd(stdout), newTokenVerifyCmd(stdout))
	return cmd
}

func newTokenKeygenCmd(stdout io.Writer) *cobra.Command {
	var out string
	var hmac bool
	cmd := &cobra.Command{
		Use:   "keygen --out PREFIX",
		Short: "Make an Ed25519 key pair (PREFIX.key, PREFIX.pub), or an HMAC secret (PREFIX.secret)",
		Args:  noArgs("tcpscope token keygen --out PREFIX"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return usagef("name the files: --out /etc/tcpscope/token", "keygen needs --out")
			}
			if hmac {
				secret, err := token.GenerateSecret(rand.Reader)
				if err != nil {
					return fmt.Errorf("generate a secret: %w", err)
				}
				if err := writeNew(out+".secret", secret, 0o600); err != nil {
					return err
				}
				fmt.Fprintf(stdout, "%s.secret: the HMAC secret; it issues and verifies, so keep it on the issuer and the servers only\n", out)
				return nil
			}
			priv, pub, err := token.GenerateEd25519(rand.Reader)
			if err != nil {
				return fmt.Errorf("generate a key: %w", err)
			}
			if err := writeNew(out+".key", priv, 0o600); err != nil {
				return err
			}
			if err := writeNew(out+".pub", pub, 0o644); err != nil {
				return err
			}
			fmt.Fprintf(stdout, "%s.key: the private key, to issue tokens with (keep it secret)\n%s.pub: the public key, for servers' --token-key\n", out, out)
			return nil
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "file name prefix")
	cmd.Flags().BoolVar(&hmac, "hmac", false, "a shared HMAC secret instead of an Ed25519 key pair")
	return cmd
}

// writeNew writes a file that must not exist yet: a key is never
// overwritten by mistake.
func writeNew(name string, data []byte, perm os.FileMode) error {
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return usagef("choose another --out, or remove the old key first", "write %s: %v", name, err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", name, err)
	}
	return f.Close()
}

func readKey(name string) (*token.Key, error) {
	if name == "" {
		return nil, usagef("give the key: --key FILE (tcpscope token keygen makes one)", "no --key")
	}
	data, err := os.ReadFile(name)
	if err != nil {
		return nil, usagef("give a readable key file", "read --key: %v", err)
	}
	k, err := token.ParseKey(data)
	if err != nil {
		return nil, usagef("an Ed25519 key (PEM or JSON Web Key) or an HMAC secret of 32 bytes or more", "--key %s: %v", name, err)
	}
	return k, nil
}

func newTokenIssueCmd(stdout io.Writer) *cobra.Command {
	var keyFile, subject, issuer, id string
	var audience []string
	ttl := 10 * time.Minute
	cmd := &cobra.Command{
		Use:   "issue --key FILE --subject NAME [--audience SERVER]...",
		Short: "Issue an access token",
		Args:  noArgs("tcpscope token issue --key FILE --subject NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			k, err := readKey(keyFile)
			if err != nil {
				return err
			}
			if !k.CanSign() {
				return usagef("issue with the private key (PREFIX.key) or the HMAC secret", "%s is a public key: it verifies, it cannot issue", keyFile)
			}
			if subject == "" {
				return usagef("say who the token is for: --subject alice", "issue needs --subject")
			}
			if ttl <= 0 || ttl > 366*24*time.Hour {
				return usagef("use a --ttl from 1s to a year", "bad --ttl %v", ttl)
			}
			now := time.Now()
			tok, err := token.Issue(k, token.Claims{Issuer: issuer, Subject: subject, Audience: audience, IssuedAt: now, NotBefore: now.Add(-time.Minute), Expiry: now.Add(ttl), ID: id})
			if err != nil {
				return fmt.Errorf("issue: %w", err)
			}
			fmt.Fprintln(stdout, tok)
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&keyFile, "key", "", "the private key or HMAC secret to sign with")
	fl.StringVar(&subject, "subject", "", "who the token is for (it appears in the server's log)")
	fl.StringArrayVar(&audience, "audience", nil, "a server the token is for (its --token-audience); repeat for several")
	fl.StringVar(&issuer, "issuer", "", "the issuer's name (a server's --token-issuer)")
	fl.StringVar(&id, "id", "", "a token ID (jti), for your records")
	fl.Var(seconds{&ttl}, "ttl", "how long the token is valid")
	return cmd
}

func newTokenVerifyCmd(stdout io.Writer) *cobra.Command {
	var keyFile, audience, issuer string
	cmd := &cobra.Command{
		Use:   "verify --key FILE TOKEN",
		Short: "Check a token as a server would, and print what it says",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usagef("tcpscope token verify --key FILE TOKEN", "verify takes one token, got %d arguments", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			k, err := readKey(keyFile)
			if err != nil {
				return err
			}
			v := &token.Verifier{Keys: []*token.Key{k}, Audience: audience, Issuer: issuer}
			c, err := v.Verify(strings.TrimSpace(args[0]), time.Now())
			if err != nil {
				return &fault.Error{Code: fault.Denied, Msg: err.Error(), Hint: "issue a new token, or check --key, --audience and --issuer"}
			}
			fmt.Fprintf(stdout, "valid: subject %q, audience %q, issuer %q, expires %s\n", c.Subject, strings.Join(c.Audience, ","), c.Issuer, c.Expiry.UTC().Format(time.RFC3339))
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&keyFile, "key", "", "the public key (or secret) that verifies")
	fl.StringVar(&audience, "audience", "", "a server name the token must be for")
	fl.StringVar(&issuer, "issuer", "", "the issuer it must name")
	return cmd
}
