package tcpmath

// CalculationSchema is the schema version of a Calculation document
// (docs/JSON.md). A field that goes or changes meaning bumps the number;
// new fields, and new keys in Inputs and Results, do not.
const CalculationSchema = "tcpscope.calc/1"

// Calculation is the JSON document of `tcpscope calc ... --json`: one
// calculation's inputs and results as plain numbers. Each key names its
// unit (rate_bps, rtt_s, mss_bytes, ...; loss and ber are probabilities,
// c the Mathis constant); docs/JSON.md lists the keys of each
// calculation.
type Calculation struct {
	Schema  string             `json:"schema"` // CalculationSchema
	Calc    string             `json:"calc"`   // the subcommand: bdp, window, mathis, loss, ber, pps, fiber, transfer
	Inputs  map[string]float64 `json:"inputs"`
	Results map[string]float64 `json:"results"`
}

// NewCalculation is the document of calculation calc.
func NewCalculation(calc string, inputs, results map[string]float64) Calculation {
	return Calculation{Schema: CalculationSchema, Calc: calc, Inputs: inputs, Results: results}
}
