package calibrate

import (
	"math"
	"slices"
)

// Robust fits y ≈ X·β with β ≥ 0, robustly: iteratively reweighted least squares with
// Huber's weights. Row i's residual is measured in units of scale[i] (a larger interval
// may miss by more tokens); residuals within huberK robust standard deviations (the
// median absolute residual / 0.6745) count in full, larger ones in proportion to
// huberK/|z|, so the few intervals into which Claude Code injected text the file does not
// hold (reminders, attachments: hundreds to thousands of tokens) steer the fit little.
// Each weighted least-squares step keeps β ≥ 0 (Lawson and Hanson's active set): a
// character never costs less than nothing.
func Robust(X [][]float64, y, scale []float64, huberK float64) []float64 {
	w := make([]float64, len(y))
	for i := range w {
		w[i] = 1 / (scale[i] * scale[i])
	}
	beta := nnls(X, y, w)
	z := make([]float64, len(y))
	for range 100 {
		sigma := robustSigma(X, y, scale, beta, z)
		k := huberK * sigma
		for i := range w {
			w[i] = 1 / (scale[i] * scale[i])
			if z[i] > k {
				w[i] *= k / z[i]
			}
		}
		next := nnls(X, y, w)
		d := 0.0
		for j := range next {
			d += math.Abs(next[j]-beta[j]) / max(math.Abs(beta[j]), 1e-9)
		}
		beta = next
		if d < 1e-10 {
			break
		}
	}
	return beta
}

// robustSigma fills z with the absolute standardized residuals of β and returns their
// robust standard deviation.
func robustSigma(X [][]float64, y, scale, beta, z []float64) float64 {
	for i := range y {
		z[i] = math.Abs(y[i]-dot(X[i], beta)) / scale[i]
	}
	sigma := quantile(z, 0.5) / 0.6745
	if sigma == 0 {
		sigma = 1e-12
	}
	return sigma
}

// Level is the factor that makes a fit unbiased in sum, Σy / Σ X·β.
//
// A robust fit follows the typical interval, but the truth of many intervals also holds
// text Claude Code added without logging it (reminders, attachments, instructions at a
// subagent's start): always more, never less, so the robust fit alone falls several
// percent short of the total. ctxkit decides on totals (how full the window is), so the
// prices are scaled to make the training sum right; the price of a typical interval is
// then a few percent high (scripts/calibrate/README.md shows both).
func Level(X [][]float64, y, beta []float64) float64 {
	sy, sp := 0.0, 0.0
	for i := range y {
		sy += y[i]
		sp += dot(X[i], beta)
	}
	if sp <= 0 {
		return 1
	}
	return sy / sp
}

// nnls solves min Σ w_i (y_i - X_i·β)² subject to β ≥ 0 (Lawson and Hanson's active-set
// method, on the normal equations: the problems here have a handful of columns).
func nnls(X [][]float64, y, w []float64) []float64 {
	p := len(X[0])
	G := make([][]float64, p)
	for a := range G {
		G[a] = make([]float64, p)
	}
	h := make([]float64, p)
	for i, row := range X {
		for a := range p {
			h[a] += w[i] * row[a] * y[i]
			for b := range p {
				G[a][b] += w[i] * row[a] * row[b]
			}
		}
	}
	passive := make([]bool, p)
	x := make([]float64, p)
	for range 3 * p {
		// The column whose gradient most wants to grow β enters the passive set.
		best, enter := 1e-12*maxAbs(h), -1
		for a := range p {
			if passive[a] {
				continue
			}
			g := h[a]
			for b := range p {
				g -= G[a][b] * x[b]
			}
			if g > best {
				best, enter = g, a
			}
		}
		if enter < 0 {
			break
		}
		passive[enter] = true
		for {
			s := solvePassive(G, h, passive)
			feasible := true
			for a := range p {
				if passive[a] && s[a] <= 0 {
					feasible = false
				}
			}
			if feasible {
				x = s
				break
			}
			// Step towards s as far as β stays ≥ 0; the columns that reach 0 leave.
			alpha := 1.0
			for a := range p {
				if passive[a] && s[a] <= 0 {
					alpha = min(alpha, x[a]/(x[a]-s[a]))
				}
			}
			for a := range p {
				x[a] += alpha * (s[a] - x[a])
				if passive[a] && x[a] <= 1e-15 {
					passive[a], x[a] = false, 0
				}
			}
		}
	}
	return x
}

// solvePassive solves the normal equations restricted to the passive columns (0 for the
// others).
func solvePassive(G [][]float64, h []float64, passive []bool) []float64 {
	var idx []int
	for a, ok := range passive {
		if ok {
			idx = append(idx, a)
		}
	}
	A := make([][]float64, len(idx))
	b := make([]float64, len(idx))
	for i, a := range idx {
		A[i] = make([]float64, len(idx))
		for j, c := range idx {
			A[i][j] = G[a][c]
		}
		b[i] = h[a]
	}
	z := solve(A, b)
	s := make([]float64, len(h))
	for i, a := range idx {
		s[a] = z[i]
	}
	return s
}

// solve solves A z = b by Gaussian elimination with partial pivoting (A is small and,
// being a Gram matrix of independent columns, not singular).
func solve(A [][]float64, b []float64) []float64 {
	n := len(b)
	for c := range n {
		piv := c
		for r := c + 1; r < n; r++ {
			if math.Abs(A[r][c]) > math.Abs(A[piv][c]) {
				piv = r
			}
		}
		A[c], A[piv] = A[piv], A[c]
		b[c], b[piv] = b[piv], b[c]
		if A[c][c] == 0 {
			continue
		}
		for r := c + 1; r < n; r++ {
			f := A[r][c] / A[c][c]
			for k := c; k < n; k++ {
				A[r][k] -= f * A[c][k]
			}
			b[r] -= f * b[c]
		}
	}
	z := make([]float64, n)
	for i := n - 1; i >= 0; i-- {
		s := b[i]
		for k := i + 1; k < n; k++ {
			s -= A[i][k] * z[k]
		}
		if A[i][i] != 0 {
			z[i] = s / A[i][i]
		}
	}
	return z
}

func dot(a, b []float64) float64 {
	s := 0.0
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

func maxAbs(v []float64) float64 {
	m := 0.0
	for _, x := range v {
		m = max(m, math.Abs(x))
	}
	return m
}

// quantile is the q-quantile of v (the element at rank round(q·(n-1))); NaN for none.
func quantile(v []float64, q float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	c := slices.Clone(v)
	slices.Sort(c)
	return c[int(q*float64(len(c)-1)+0.5)]
}
