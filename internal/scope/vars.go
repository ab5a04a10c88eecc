package scope

import (
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/tcpscope/tcpscope/internal/model"
)

// Var is one kernel variable of a followed connection, as the "all
// variables" pane shows it: its name (model.Sample's JSON name, without
// the _ns of a duration) and its value with its unit, or absent when the
// kernel did not give it (an older kernel's shorter tcp_info, BBR's model
// on a connection not using BBR).
type Var struct {
	Name, Value string
	Absent      bool
}

// countUnit is the unit of a plain count, which its type does not carry
// (durations, byte sizes and rates carry theirs); "" for none.
func countUnit(name string) string {
	switch name {
	case "unacked", "sacked", "lost", "retrans", "fackets", "snd_ssthresh", "snd_cwnd", "reordering", "total_retrans",
		"segs_out", "segs_in", "data_segs_in", "data_segs_out", "delivered", "delivered_ce":
		return "segments"
	case "rcv_ooopack", "received_ce":
		return "packets"
	case "retransmits", "total_rto":
		return "timeouts"
	case "probes":
		return "probes"
	case "backoff":
		return "doublings"
	case "dsack_dups", "reord_seen", "rehash":
		return "events"
	case "total_rto_recoveries":
		return "recoveries"
	}
	return ""
}

// Variables lists every variable of s, in model.Sample's order, BBR's
// model last.
func Variables(s *model.Sample) []Var {
	var out []Var
	add := func(prefix string, v reflect.Value) {
		t := v.Type()
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "" || name == "-" || name == "at_ns" || name == "bbr" {
				continue
			}
			name = prefix + strings.TrimSuffix(name, "_ns")
			val, ok := format(name, v.Field(i))
			out = append(out, Var{Name: name, Value: val, Absent: !ok})
		}
	}
	add("", reflect.ValueOf(s).Elem())
	if s.BBR != nil {
		add("bbr.", reflect.ValueOf(s.BBR).Elem())
	} else {
		for _, n := range []string{"bw", "min_rtt", "pacing_gain", "cwnd_gain"} {
			out = append(out, Var{Name: "bbr." + n, Value: "absent", Absent: true})
		}
	}
	return out
}

// format is a field's value with its unit; false when it is absent.
func format(name string, v reflect.Value) (string, bool) {
	// model.Opt: absent, or its value.
	if v.Kind() == reflect.Struct && v.Type().NumField() == 2 && v.Type().Field(0).Name == "V" && v.Type().Field(1).Name == "OK" {
		if !v.Field(1).Bool() {
			return "absent", false
		}
		v = v.Field(0)
	}
	switch x := v.Interface().(type) {
	case time.Duration:
		return dur(x), true
	case model.Bytes:
		if x < 1024 {
			return fmt.Sprintf("%d B", x), true
		}
		return fmt.Sprintf("%d B (%s)", x, x.Binary()), true
	case model.Bitrate:
		return x.String(), true
	case bool:
		if x {
			return "yes", true
		}
		return "no", true
	case string:
		if x == "" {
			return "absent", false
		}
		return x, true
	case float64:
		return fmt.Sprintf("%.3g", x), true
	case fmt.Stringer:
		return x.String(), true
	}
	if name == "kernel_len" {
		return fmt.Sprintf("%d B", v.Interface()), true
	}
	if u := countUnit(name); u != "" {
		return fmt.Sprintf("%v %s", v.Interface(), u), true
	}
	return fmt.Sprint(v.Interface()), true
}

// renderVars draws vars in as many columns as width holds, from row top
// of the columns, in height lines at most; it returns the text and the
// number of lines the whole table takes.
func renderVars(th theme, vars []Var, width, height, top int) (string, int) {
	nameW, valW := 0, 0
	for _, v := range vars {
		nameW, valW = max(nameW, len([]rune(v.Name))), max(valW, len([]rune(v.Value)))
	}
	colW := nameW + 1 + valW + 3
	cols := max(1, (width+3)/colW)
	rows := (len(vars) + cols - 1) / cols
	var b strings.Builder
	for r := top; r < rows && r < top+height; r++ {
		var line strings.Builder
		for c := range cols {
			i := c*rows + r
			if i >= len(vars) {
				break
			}
			v := vars[i]
			val := v.Value
			cell := fmt.Sprintf("%-*s %-*s", nameW, v.Name, valW, val)
			if v.Absent {
				cell = fmt.Sprintf("%-*s %s", nameW, v.Name, th.dim.Render(fmt.Sprintf("%-*s", valW, val)))
			}
			if c > 0 {
				line.WriteString("   ")
			}
			line.WriteString(cell)
		}
		b.WriteString(strings.TrimRight(line.String(), " ") + "\n")
	}
	return b.String(), rows
}
