// SPDX-License-Identifier: MIT
// Payload Tools devnet stand-in, written from the x402 `batch-settlement` EVM specification
// (specs/schemes/batch-settlement/scheme_batch_settlement_evm.md) and the ABI and EIP-712 types
// that @x402/evm uses. It is NOT the audited x402BatchSettlement contract and must never be
// deployed to a real chain.
pragma solidity ^0.8.24;

import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {SafeERC20} from "@openzeppelin/contracts/token/ERC20/utils/SafeERC20.sol";
import {ECDSA} from "@openzeppelin/contracts/utils/cryptography/ECDSA.sol";
import {MessageHashUtils} from "@openzeppelin/contracts/utils/cryptography/MessageHashUtils.sol";
import {SignatureChecker} from "@openzeppelin/contracts/utils/cryptography/SignatureChecker.sol";
import {Multicall} from "@openzeppelin/contracts/utils/Multicall.sol";
import {ReentrancyGuardTransient} from "@openzeppelin/contracts/utils/ReentrancyGuardTransient.sol";
import {IDepositCollector} from "./IDepositCollector.sol";

/// @title x402BatchSettlement (devnet)
/// @notice Escrow of the x402 `batch-settlement` scheme: payers deposit into channels, receivers
/// claim cumulative vouchers (accounting only) and settle claimed funds in one transfer; refunds
/// and timed withdrawals return the unclaimed rest to the payer.
/// @dev The devnet places this runtime code with `anvil_setCode`, so no constructor runs and no
/// immutable exists: the EIP-712 domain separator is computed from `block.chainid` and
/// `address(this)` on each call, and every storage slot starts at zero.
contract X402BatchSettlement is ReentrancyGuardTransient, Multicall {
    using SafeERC20 for IERC20;

    struct ChannelConfig {
        address payer;
        address payerAuthorizer;
        address receiver;
        address receiverAuthorizer;
        address token;
        uint40 withdrawDelay;
        bytes32 salt;
    }

    struct Voucher {
        ChannelConfig channel;
        uint128 maxClaimableAmount;
    }

    struct VoucherClaim {
        Voucher voucher;
        bytes signature;
        uint128 totalClaimed;
    }

    struct ChannelState {
        uint128 balance;
        uint128 totalClaimed;
    }

    struct PendingWithdrawal {
        uint128 amount;
        uint40 initiatedAt;
    }

    struct ReceiverState {
        uint128 totalClaimed;
        uint128 totalSettled;
    }

    bytes32 public constant CHANNEL_CONFIG_TYPEHASH = keccak256(
        "ChannelConfig(address payer,address payerAuthorizer,address receiver,address receiverAuthorizer,address token,uint40 withdrawDelay,bytes32 salt)"
    );
    bytes32 private constant VOUCHER_TYPEHASH =
        keccak256("Voucher(bytes32 channelId,uint128 maxClaimableAmount)");
    bytes32 private constant REFUND_TYPEHASH =
        keccak256("Refund(bytes32 channelId,uint256 nonce,uint128 amount)");
    bytes32 private constant CLAIM_ENTRY_TYPEHASH =
        keccak256("ClaimEntry(bytes32 channelId,uint128 maxClaimableAmount,uint128 totalClaimed)");
    bytes32 private constant CLAIM_BATCH_TYPEHASH = keccak256(
        "ClaimBatch(ClaimEntry[] claims)ClaimEntry(bytes32 channelId,uint128 maxClaimableAmount,uint128 totalClaimed)"
    );
    bytes32 private constant DOMAIN_TYPEHASH = keccak256(
        "EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)"
    );
    bytes32 private constant NAME_HASH = keccak256("x402 Batch Settlement");
    bytes32 private constant VERSION_HASH = keccak256("1");

    /// @notice Bounds of `ChannelConfig.withdrawDelay`, in seconds (15 minutes to 30 days).
    uint40 public constant MIN_WITHDRAW_DELAY = 900;
    uint40 public constant MAX_WITHDRAW_DELAY = 2_592_000;

    mapping(bytes32 channelId => ChannelState) private _channels;
    mapping(bytes32 channelId => PendingWithdrawal) private _pendingWithdrawals;
    mapping(bytes32 channelId => uint256) private _refundNonces;
    mapping(address receiver => mapping(address token => ReceiverState)) private _receivers;

    event ChannelCreated(bytes32 indexed channelId, ChannelConfig config);
    event Deposited(
        bytes32 indexed channelId, address indexed sender, address indexed collector, uint128 amount
    );
    event Claimed(bytes32 indexed channelId, address indexed sender, uint128 amount, uint128 totalClaimed);
    event Settled(address indexed receiver, address indexed token, address indexed sender, uint128 amount);
    event Refunded(bytes32 indexed channelId, address indexed sender, uint128 amount, uint256 nonce);
    event WithdrawInitiated(bytes32 indexed channelId, uint128 amount, uint40 initiatedAt);
    event Withdrawn(bytes32 indexed channelId, uint128 amount);
    event ChannelClosed(bytes32 indexed channelId, ChannelConfig config);

    error ZeroAmount();
    error InvalidChannelConfig();
    error WithdrawDelayOutOfRange(uint40 withdrawDelay);
    error DepositNotReceived(uint256 expected, uint256 received);
    error EmptyClaimBatch();
    error AuthorizerMismatch(uint256 index);
    error InvalidAuthorizerSignature();
    error InvalidVoucherSignature(bytes32 channelId);
    error ClaimExceedsVoucher(bytes32 channelId, uint128 totalClaimed, uint128 maxClaimableAmount);
    error ClaimExceedsBalance(bytes32 channelId, uint128 totalClaimed, uint128 balance);
    error Unauthorized(address caller);
    error InvalidRefundNonce(uint256 expected, uint256 given);
    error WithdrawExceedsAvailable(uint128 amount, uint128 available);
    error WithdrawalPending(bytes32 channelId);
    error NoPendingWithdrawal(bytes32 channelId);
    error WithdrawDelayNotElapsed(uint256 finalizableAt);

    // ---------------------------------------------------------------- deposits

    /// @notice Credits `amount` to the channel of `config`, pulled from the payer by `collector`
    /// with `collectorData` (for the ERC-3009 collector, the payer's ReceiveWithAuthorization).
    /// Creates the channel on its first deposit. Anyone may relay it: the collector's
    /// authorization binds the payer, the amount and the channel.
    function deposit(ChannelConfig calldata config, uint128 amount, address collector, bytes calldata collectorData)
        external
        nonReentrant
    {
        if (amount == 0) revert ZeroAmount();
        _validateConfig(config);
        bytes32 channelId = getChannelId(config);
        IERC20 token = IERC20(config.token);
        uint256 before = token.balanceOf(address(this));
        IDepositCollector(collector).collect(config.payer, config.token, amount, channelId, collectorData);
        // Credit only what arrived: a collector is any address the relayer names.
        uint256 received = token.balanceOf(address(this)) - before;
        if (received != amount) revert DepositNotReceived(amount, received);

        ChannelState storage channel = _channels[channelId];
        uint128 previous = channel.balance;
        channel.balance = previous + amount;
        if (previous == 0) emit ChannelCreated(channelId, config);
        emit Deposited(channelId, msg.sender, collector, amount);
    }

    // ---------------------------------------------------------------- claims

    /// @notice Claims vouchers as the receiver or receiver authorizer of every row (no signature).
    function claim(VoucherClaim[] calldata voucherClaims) external nonReentrant {
        for (uint256 i = 0; i < voucherClaims.length; i++) {
            ChannelConfig calldata config = voucherClaims[i].voucher.channel;
            if (msg.sender != config.receiver && msg.sender != config.receiverAuthorizer) {
                revert Unauthorized(msg.sender);
            }
            _claim(voucherClaims[i]);
        }
    }

    /// @notice Claims vouchers of channels that share one receiver authorizer, whose EIP-712
    /// `ClaimBatch` signature covers every row; anyone may relay it.
    function claimWithSignature(VoucherClaim[] calldata voucherClaims, bytes calldata authorizerSignature)
        external
        nonReentrant
    {
        if (voucherClaims.length == 0) revert EmptyClaimBatch();
        address authorizer = voucherClaims[0].voucher.channel.receiverAuthorizer;
        for (uint256 i = 1; i < voucherClaims.length; i++) {
            if (voucherClaims[i].voucher.channel.receiverAuthorizer != authorizer) revert AuthorizerMismatch(i);
        }
        bytes32 digest = getClaimBatchDigest(voucherClaims);
        if (authorizer == address(0) || !SignatureChecker.isValidSignatureNow(authorizer, digest, authorizerSignature))
        {
            revert InvalidAuthorizerSignature();
        }
        for (uint256 i = 0; i < voucherClaims.length; i++) {
            _claim(voucherClaims[i]);
        }
    }

    /// @dev Raises the channel's `totalClaimed` to the row's cumulative `totalClaimed`. A row at or
    /// below what is already claimed (a replay, an older voucher) changes nothing.
    function _claim(VoucherClaim calldata row) private {
        ChannelConfig calldata config = row.voucher.channel;
        bytes32 channelId = getChannelId(config);
        uint128 maxClaimable = row.voucher.maxClaimableAmount;
        if (row.totalClaimed > maxClaimable) {
            revert ClaimExceedsVoucher(channelId, row.totalClaimed, maxClaimable);
        }
        ChannelState storage channel = _channels[channelId];
        if (row.totalClaimed > channel.balance) {
            revert ClaimExceedsBalance(channelId, row.totalClaimed, channel.balance);
        }
        if (!_isValidVoucherSignature(config, getVoucherDigest(channelId, maxClaimable), row.signature)) {
            revert InvalidVoucherSignature(channelId);
        }
        uint128 claimedBefore = channel.totalClaimed;
        if (row.totalClaimed <= claimedBefore) return;
        uint128 delta = row.totalClaimed - claimedBefore;
        channel.totalClaimed = row.totalClaimed;
        _receivers[config.receiver][config.token].totalClaimed += delta;
        emit Claimed(channelId, msg.sender, delta, row.totalClaimed);
    }

    /// @dev With a payer authorizer the voucher must be its ECDSA signature (no contract call);
    /// without one, the payer's (an EOA, or an EIP-1271 wallet).
    function _isValidVoucherSignature(ChannelConfig calldata config, bytes32 digest, bytes calldata signature)
        private
        view
        returns (bool)
    {
        if (config.payerAuthorizer != address(0)) {
            (address recovered, ECDSA.RecoverError err,) = ECDSA.tryRecover(digest, signature);
            return err == ECDSA.RecoverError.NoError && recovered == config.payerAuthorizer;
        }
        return SignatureChecker.isValidSignatureNow(config.payer, digest, signature);
    }

    // ---------------------------------------------------------------- settlement

    /// @notice Transfers everything claimed but not yet settled for `receiver` in `token` to
    /// `receiver`. Permissionless; settling nothing is a no-op without an event.
    function settle(address receiver, address token) external nonReentrant {
        ReceiverState storage state = _receivers[receiver][token];
        uint128 amount = state.totalClaimed - state.totalSettled;
        if (amount == 0) return;
        state.totalSettled = state.totalClaimed;
        IERC20(token).safeTransfer(receiver, amount);
        emit Settled(receiver, token, msg.sender, amount);
    }

    // ---------------------------------------------------------------- refunds

    /// @notice Cooperative refund by the receiver or receiver authorizer: returns up to `amount`
    /// of the unclaimed escrow to the payer. Advances the refund nonce.
    function refund(ChannelConfig calldata config, uint128 amount) external nonReentrant {
        if (msg.sender != config.receiver && msg.sender != config.receiverAuthorizer) revert Unauthorized(msg.sender);
        _refund(config, getChannelId(config), amount);
    }

    /// @notice Cooperative refund relayed by anyone with the receiver authorizer's EIP-712
    /// `Refund(channelId, nonce, amount)` signature; `nonce` must be the channel's current
    /// `refundNonce`.
    function refundWithSignature(
        ChannelConfig calldata config,
        uint128 amount,
        uint256 nonce,
        bytes calldata receiverAuthorizerSignature
    ) external nonReentrant {
        bytes32 channelId = getChannelId(config);
        uint256 expected = _refundNonces[channelId];
        if (nonce != expected) revert InvalidRefundNonce(expected, nonce);
        if (
            config.receiverAuthorizer == address(0)
                || !SignatureChecker.isValidSignatureNow(
                    config.receiverAuthorizer, getRefundDigest(channelId, nonce, amount), receiverAuthorizerSignature
                )
        ) revert InvalidAuthorizerSignature();
        _refund(config, channelId, amount);
    }

    /// @dev The nonce advances first, so a refund that moves nothing (no unclaimed escrow) still
    /// invalidates signatures over the previous nonce. A pending withdrawal shrinks by the
    /// refunded amount, and is cancelled when the refund covers it.
    function _refund(ChannelConfig calldata config, bytes32 channelId, uint128 amount) private {
        if (amount == 0) revert ZeroAmount();
        uint256 nonce = _refundNonces[channelId]++;
        ChannelState storage channel = _channels[channelId];
        uint128 available = channel.balance - channel.totalClaimed;
        uint128 refunded = amount < available ? amount : available;
        if (refunded == 0) return;
        channel.balance -= refunded;
        PendingWithdrawal storage pending = _pendingWithdrawals[channelId];
        if (pending.initiatedAt != 0) {
            if (refunded >= pending.amount) delete _pendingWithdrawals[channelId];
            else pending.amount -= refunded;
        }
        IERC20(config.token).safeTransfer(config.payer, refunded);
        emit Refunded(channelId, msg.sender, refunded, nonce);
        if (channel.balance == 0) emit ChannelClosed(channelId, config);
    }

    // ---------------------------------------------------------------- timed withdrawal

    /// @notice Starts the payer's escape hatch: after `config.withdrawDelay` seconds,
    /// `finalizeWithdraw` returns up to `amount` to the payer. `amount` may not exceed the
    /// unclaimed escrow now; one withdrawal may be pending at a time.
    function initiateWithdraw(ChannelConfig calldata config, uint128 amount) external nonReentrant {
        _onlyPayerSide(config);
        if (amount == 0) revert ZeroAmount();
        bytes32 channelId = getChannelId(config);
        ChannelState storage channel = _channels[channelId];
        uint128 available = channel.balance - channel.totalClaimed;
        if (amount > available) revert WithdrawExceedsAvailable(amount, available);
        if (_pendingWithdrawals[channelId].initiatedAt != 0) revert WithdrawalPending(channelId);
        uint40 now40 = uint40(block.timestamp);
        _pendingWithdrawals[channelId] = PendingWithdrawal({amount: amount, initiatedAt: now40});
        emit WithdrawInitiated(channelId, amount, now40);
    }

    /// @notice Completes a pending withdrawal once its delay has elapsed, transferring the
    /// requested amount capped at the unclaimed escrow left (claims made meanwhile come first).
    function finalizeWithdraw(ChannelConfig calldata config) external nonReentrant {
        _onlyPayerSide(config);
        bytes32 channelId = getChannelId(config);
        PendingWithdrawal memory pending = _pendingWithdrawals[channelId];
        if (pending.initiatedAt == 0) revert NoPendingWithdrawal(channelId);
        uint256 finalizableAt = uint256(pending.initiatedAt) + config.withdrawDelay;
        if (block.timestamp < finalizableAt) revert WithdrawDelayNotElapsed(finalizableAt);
        delete _pendingWithdrawals[channelId];
        ChannelState storage channel = _channels[channelId];
        uint128 available = channel.balance - channel.totalClaimed;
        uint128 withdrawn = pending.amount < available ? pending.amount : available;
        if (withdrawn == 0) return;
        channel.balance -= withdrawn;
        IERC20(config.token).safeTransfer(config.payer, withdrawn);
        emit Withdrawn(channelId, withdrawn);
        if (channel.balance == 0) emit ChannelClosed(channelId, config);
    }

    function _onlyPayerSide(ChannelConfig calldata config) private view {
        if (msg.sender != config.payer && (config.payerAuthorizer == address(0) || msg.sender != config.payerAuthorizer))
        {
            revert Unauthorized(msg.sender);
        }
    }

    function _validateConfig(ChannelConfig calldata config) private pure {
        if (
            config.payer == address(0) || config.receiver == address(0) || config.receiverAuthorizer == address(0)
                || config.token == address(0)
        ) revert InvalidChannelConfig();
        if (config.withdrawDelay < MIN_WITHDRAW_DELAY || config.withdrawDelay > MAX_WITHDRAW_DELAY) {
            revert WithdrawDelayOutOfRange(config.withdrawDelay);
        }
    }

    // ---------------------------------------------------------------- views

    /// @notice EIP-712 hash of `config` under the "x402 Batch Settlement" domain (version "1",
    /// this chain, this address): the channel's id.
    function getChannelId(ChannelConfig calldata config) public view returns (bytes32) {
        return _hashTypedData(
            keccak256(
                abi.encode(
                    CHANNEL_CONFIG_TYPEHASH,
                    config.payer,
                    config.payerAuthorizer,
                    config.receiver,
                    config.receiverAuthorizer,
                    config.token,
                    config.withdrawDelay,
                    config.salt
                )
            )
        );
    }

    function getVoucherDigest(bytes32 channelId, uint128 maxClaimableAmount) public view returns (bytes32) {
        return _hashTypedData(keccak256(abi.encode(VOUCHER_TYPEHASH, channelId, maxClaimableAmount)));
    }

    function getRefundDigest(bytes32 channelId, uint256 nonce, uint128 amount) public view returns (bytes32) {
        return _hashTypedData(keccak256(abi.encode(REFUND_TYPEHASH, channelId, nonce, amount)));
    }

    /// @notice EIP-712 digest of `ClaimBatch{claims: ClaimEntry[]}` with one entry
    /// (channelId, maxClaimableAmount, totalClaimed) per row, in order.
    function getClaimBatchDigest(VoucherClaim[] calldata voucherClaims) public view returns (bytes32) {
        bytes32[] memory entries = new bytes32[](voucherClaims.length);
        for (uint256 i = 0; i < voucherClaims.length; i++) {
            VoucherClaim calldata row = voucherClaims[i];
            entries[i] = keccak256(
                abi.encode(
                    CLAIM_ENTRY_TYPEHASH,
                    getChannelId(row.voucher.channel),
                    row.voucher.maxClaimableAmount,
                    row.totalClaimed
                )
            );
        }
        return _hashTypedData(keccak256(abi.encode(CLAIM_BATCH_TYPEHASH, keccak256(abi.encodePacked(entries)))));
    }

    function channels(bytes32 channelId) external view returns (uint128 balance, uint128 totalClaimed) {
        ChannelState storage channel = _channels[channelId];
        return (channel.balance, channel.totalClaimed);
    }

    function pendingWithdrawals(bytes32 channelId) external view returns (uint128 amount, uint40 initiatedAt) {
        PendingWithdrawal storage pending = _pendingWithdrawals[channelId];
        return (pending.amount, pending.initiatedAt);
    }

    function receivers(address receiver, address token)
        external
        view
        returns (uint128 totalClaimed, uint128 totalSettled)
    {
        ReceiverState storage state = _receivers[receiver][token];
        return (state.totalClaimed, state.totalSettled);
    }

    /// @notice The nonce the next `refundWithSignature` of the channel must carry.
    function refundNonce(bytes32 channelId) external view returns (uint256) {
        return _refundNonces[channelId];
    }

    // solhint-disable-next-line func-name-mixedcase
    function DOMAIN_SEPARATOR() public view returns (bytes32) {
        return keccak256(abi.encode(DOMAIN_TYPEHASH, NAME_HASH, VERSION_HASH, block.chainid, address(this)));
    }

    function _hashTypedData(bytes32 structHash) private view returns (bytes32) {
        return MessageHashUtils.toTypedDataHash(DOMAIN_SEPARATOR(), structHash);
    }
}
