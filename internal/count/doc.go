// Package count is ctx-count: it reports where a conversation's tokens go (by message,
// role, block kind and tool), how full the model's window is, and which tiers of the
// pipeline would act with their defaults; it renders that as a JSON report or a picture
// for a terminal, and compares two versions of a conversation. The counting itself is
// measure's, the same figures every tier decides on.
package count
