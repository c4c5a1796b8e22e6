"""E2B's ``secrets`` endpoints (/secrets) over asb_secrets_*.
SPDX-License-Identifier: Apache-2.0"""
