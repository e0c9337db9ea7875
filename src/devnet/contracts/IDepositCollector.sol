// SPDX-License-Identifier: MIT
// Payload Tools devnet stand-in, written from the x402 `batch-settlement` EVM specification
// (specs/schemes/batch-settlement/scheme_batch_settlement_evm.md) and the ABI that @x402/evm uses.
// It is NOT the audited x402 contract and must never be deployed to a real chain.
pragma solidity ^0.8.24;

/// @notice How the devnet escrow pulls a deposit's tokens: the specification names the deposit
/// collectors but not the call between escrow and collector, so this interface is our own.
interface IDepositCollector {
    /// @notice Moves exactly `amount` of `token` from `payer` to the caller (the escrow), using
    /// the authorization carried in `collectorData`, which is bound to `channelId`.
    function collect(
        address payer,
        address token,
        uint256 amount,
        bytes32 channelId,
        bytes calldata collectorData
    ) external;
}
