"""E2B's endpoint modules, by tag. SPDX-License-Identifier: Apache-2.0"""
