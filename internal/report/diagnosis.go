package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/tcpscope/tcpscope/internal/model"
)

// WriteDiagnosis prints findings for people: the primary one as "what
// limits this transfer", then the rest, each with its evidence, fix and
// predicted effect. verbose adds the explanations.
func WriteDiagnosis(w io.Writer, findings []model.Finding, verbose bool) error {
	return writeFindings(w, "diagnosis:", findings, verbose, "also")
}

// WriteHostAudit prints a host audit's findings, worst first, each headed
// by its severity. An empty list says the host is ready.
func WriteHostAudit(w io.Writer, info *model.HostInfo, findings []model.Finding, verbose bool) error {
	title := "host audit"
	if info.Kernel != "" {
		title += " (Linux " + info.Kernel + ")"
	}
	if len(findings) == 0 {
		_, err := fmt.Fprintf(w, "%s: nothing to change for the target\n", title)
		return err
	}
	return writeFindings(w, title+":", findings, verbose, "")
}

// writeFindings prints findings under title; each is headed by "what
// limits this transfer" when primary, else by other (or its severity when
// other is empty).
func writeFindings(w io.Writer, title string, findings []model.Finding, verbose bool, other string) error {
	var b strings.Builder
	b.WriteString(title + "\n")
	for i, f := range findings {
		head := other
		if head == "" {
			head = string(f.Severity)
		}
		// With both directions in the list, every finding says which
		// it is about: the primary ones in their heading, the rest after
		// their id.
		id := f.ID
		if f.Primary {
			head = "what limits this transfer"
			if f.Direction != "" && hasOtherDirection(findings, f.Direction) {
				head += " (" + arrow(f.Direction) + ")"
			}
		} else if f.Direction != "" && hasOtherDirection(findings, f.Direction) {
			id += " (" + arrow(f.Direction) + ")"
		}
		if i > 0 {
			b.WriteString("\n")
		}
		if other == "" {
			fmt.Fprintf(&b, "  %s: %s [%s, %s confidence]\n", head, id, f.Layer, f.Confidence)
		} else {
			fmt.Fprintf(&b, "  %s: %s [%s, %s, %s confidence]\n", head, id, f.Severity, f.Layer, f.Confidence)
		}
		fmt.Fprintf(&b, "    %s\n", f.Summary)
		if verbose && f.Explanation != "" {
			fmt.Fprintf(&b, "    why: %s\n", f.Explanation)
		}
		for _, e := range f.Evidence {
			src := ""
			if e.Source != "" {
				src = " (" + e.Source + ")"
			}
			fmt.Fprintf(&b, "    - %s: %s%s\n", e.What, e.Value, src)
		}
		for _, x := range f.Fix {
			fmt.Fprintf(&b, "    fix, %s: %s\n", x.Where, x.Command)
		}
		if f.Effect != "" {
			fmt.Fprintf(&b, "    effect: %s\n", f.Effect)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// hasOtherDirection reports whether findings cover a direction besides d.
func hasOtherDirection(findings []model.Finding, d model.Direction) bool {
	for _, f := range findings {
		if f.Direction != "" && f.Direction != d {
			return true
		}
	}
	return false
}

// WriteLayers prints findings already in layer order (diagnose.ByLayer)
// under a heading per layer, as the layered method walks them.
func WriteLayers(w io.Writer, findings []model.Finding, verbose bool) error {
	if len(findings) == 0 {
		_, err := io.WriteString(w, "findings: none\n")
		return err
	}
	for i := 0; i < len(findings); {
		j := i
		for j < len(findings) && findings[j].Layer == findings[i].Layer {
			j++
		}
		if err := writeFindings(w, "\n"+string(findings[i].Layer)+":", findings[i:j], verbose, ""); err != nil {
			return err
		}
		i = j
	}
	return nil
}
