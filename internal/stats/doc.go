// Package stats summarises repeated measurements the way the source
// documents report them (the Web100 paper's 601 runs: n, mean, standard
// deviation, 95% confidence interval of the mean, median) and compares two
// sets (Welch's t-test), so "a factor of four" comes with its uncertainty.
//
// Pure: numbers in, numbers out. The Student t quantile comes from gonum;
// the median is computed here, as the mean of the two middle values.
package stats
