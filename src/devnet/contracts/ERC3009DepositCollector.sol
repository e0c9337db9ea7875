// SPDX-License-Identifier: MIT
// Payload Tools devnet stand-in, written from the x402 `batch-settlement` EVM specification
// (specs/schemes/batch-settlement/scheme_batch_settlement_evm.md) and the ABI and EIP-712 types
// that @x402/evm uses. It is NOT the audited x402 ERC3009DepositCollector and must never be
// deployed to a real chain.
pragma solidity ^0.8.24;

import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {SafeERC20} from "@openzeppelin/contracts/token/ERC20/utils/SafeERC20.sol";
import {IDepositCollector} from "./IDepositCollector.sol";

/// @notice EIP-3009 `receiveWithAuthorization` (bytes-signature form, as on FiatTokenV2_2).
interface IERC3009Receive {
    function receiveWithAuthorization(
        address from,
        address to,
        uint256 value,
        uint256 validAfter,
        uint256 validBefore,
        bytes32 nonce,
        bytes calldata signature
    ) external;
}

/// @title ERC3009DepositCollector (devnet)
/// @notice Pulls a channel deposit with the payer's EIP-3009 `ReceiveWithAuthorization`
/// (to = this collector, nonce = keccak256(abi.encode(channelId, salt))) and hands the tokens to
/// the escrow.
/// @dev The devnet places this runtime code with `anvil_setCode`, so no constructor runs: the
/// escrow's address is a constant (its canonical address, where the devnet installs it too).
contract ERC3009DepositCollector is IDepositCollector {
    using SafeERC20 for IERC20;

    /// @notice The escrow, the only caller allowed: receiveWithAuthorization must be sent by the
    /// payee, and only the escrow knows which channel the tokens are credited to.
    address public constant BATCH_SETTLEMENT = 0x4020074e9dF2ce1deE5A9C1b5c3f541D02a10003;

    error OnlyBatchSettlement(address caller);

    /// @inheritdoc IDepositCollector
    /// @dev `collectorData` is abi.encode(uint256 validAfter, uint256 validBefore, uint256 salt,
    /// bytes signature), as the SDK's facilitator builds it.
    function collect(
        address payer,
        address token,
        uint256 amount,
        bytes32 channelId,
        bytes calldata collectorData
    ) external {
        if (msg.sender != BATCH_SETTLEMENT) revert OnlyBatchSettlement(msg.sender);
        (uint256 validAfter, uint256 validBefore, uint256 salt, bytes memory signature) =
            abi.decode(collectorData, (uint256, uint256, uint256, bytes));
        // Binding the nonce to the channel stops a relayer from crediting the signed transfer to
        // any other channel.
        bytes32 nonce = keccak256(abi.encode(channelId, salt));
        IERC3009Receive(token).receiveWithAuthorization(
            payer, address(this), amount, validAfter, validBefore, nonce, signature
        );
        IERC20(token).safeTransfer(msg.sender, amount);
    }
}
