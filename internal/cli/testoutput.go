package cli

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// iperf3Timestamps is iperf3's --timestamps default, strftime's "%c "
// (C locale: "%a %b %e %H:%M:%S %Y", Go's time.ANSIC) and a space.
const iperf3Timestamps = "%c "

// linePrefix prefixes each line written through it with the time
// (--timestamps) and a title (-T), as iperf3 does: "TIME TITLE:  line".
type linePrefix struct {
	w      io.Writer
	title  string
	layout string // Go time layout of the stamp; "" for none
	now    func() time.Time
	mid    bool // the last write ended mid-line
}

func (p *linePrefix) Write(b []byte) (int, error) {
	var out bytes.Buffer
	for rest := b; len(rest) > 0; {
		if !p.mid {
			if p.layout != "" {
				out.WriteString(p.now().Format(p.layout))
			}
			if p.title != "" {
				out.WriteString(p.title + ":  ")
			}
		}
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			out.Write(rest)
			p.mid = true
			break
		}
		out.Write(rest[:i+1])
		p.mid = false
		rest = rest[i+1:]
	}
	if _, err := p.w.Write(out.Bytes()); err != nil {
		return 0, err
	}
	return len(b), nil
}

// strftimeLayout turns a --timestamps FORMAT into a Go time layout: a
// strftime format as iperf3 takes (one with a %), or a Go layout as is.
func strftimeLayout(f string) (string, error) {
	if !strings.Contains(f, "%") {
		return f, nil
	}
	directives := map[byte]string{
		'a': "Mon", 'A': "Monday", 'b': "Jan", 'h': "Jan", 'B': "January", 'c': time.ANSIC,
		'd': "02", 'e': "_2", 'F': "2006-01-02", 'H': "15", 'I': "03", 'j': "002", 'm': "01",
		'M': "04", 'p': "PM", 'S': "05", 'T': "15:04:05", 'y': "06", 'Y': "2006",
		'z': "-0700", 'Z': "MST", 'D': "01/02/06", 'R': "15:04", 'r': "03:04:05 PM",
		'x': "01/02/06", 'X': "15:04:05", '%': "%",
	}
	var b strings.Builder
	for i := 0; i < len(f); i++ {
		if f[i] != '%' {
			b.WriteByte(f[i])
			continue
		}
		if i+1 == len(f) {
			return "", fmt.Errorf("--timestamps %q ends with a lone %%", f)
		}
		i++
		g, ok := directives[f[i]]
		if !ok {
			return "", fmt.Errorf("--timestamps %q: %%%c is not one of the strftime directives taken (%%a %%A %%b %%B %%c %%d %%D %%e %%F %%H %%I %%j %%m %%M %%p %%r %%R %%S %%T %%x %%X %%y %%Y %%z %%Z %%%%)", f, f[i])
		}
		b.WriteString(g)
	}
	return b.String(), nil
}

// testOutput is where a test's report goes, from --logfile, -T and
// --timestamps: stdout, or the log file appended to, each text line
// prefixed. done closes the file.
func testOutput(f *testFlags, stdout io.Writer) (w io.Writer, done func(), err error) {
	w, done = stdout, func() {}
	if f.logfile != "" {
		file, err := os.OpenFile(f.logfile, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			return nil, nil, &failure{msg: fmt.Sprintf("--logfile: %v", err), hint: "give a file this user can write, in a directory that exists"}
		}
		w, done = file, func() { file.Close() }
	}
	if f.title == "" && f.timestamps == "" {
		return w, done, nil
	}
	if f.json || f.jsonStream || f.format == iperf3JSONFormat {
		done()
		return nil, nil, usagef("drop -T and --timestamps with JSON output: they prefix text lines", "-T or --timestamps with JSON output")
	}
	p := &linePrefix{w: w, title: f.title, now: time.Now}
	if f.timestamps != "" {
		if p.layout, err = strftimeLayout(f.timestamps); err != nil {
			done()
			return nil, nil, usagef(`a strftime format as iperf3's, e.g. --timestamps="%H:%M:%S "`, "%v", err)
		}
	}
	return p, done, nil
}
